import Contracts
import HTTPTypes
import Postgres
import ServiceRuntime

/// The room catalog as a whole: its projection (fed by the requests and status topics) and
/// its PostgREST routes, sharing the answer cache that every committed batch empties.
public struct RoomCatalog: Sendable {
    let store: CatalogStore
    let cache: CatalogAnswerCache
    let routes: CatalogRoutes
    let configuration: CatalogConfiguration

    /// - Parameter linkTTL: how long the presigned URLs of an answer are valid; cached answers
    ///   live at most half of it.
    public init(database: PostgresClient, authenticator: RequestAuthenticator, links: any OutputLinks,
                configuration: CatalogConfiguration, linkTTL: Duration, tables: CatalogTables = .live) {
        self.configuration = configuration
        store = CatalogStore(database: database, tables: tables)
        cache = CatalogAnswerCache(ttl: min(configuration.cacheTTL, linkTTL / 2), capacity: configuration.cacheEntries)
        routes = CatalogRoutes(store: store, authenticator: authenticator, links: links, cache: cache, maxLimit: configuration.maxLimit)
    }

    public func router() -> Router { routes.router() }

    /// The read model's projection; its commits invalidate the cached answers.
    public func projection(requestsTopic: String, uploadsTopic: String = Topics.roomUploads,
                           tables: CatalogTables = .live) -> CatalogProjection {
        let cache = self.cache
        return CatalogProjection(requestsTopic: requestsTopic, uploadsTopic: uploadsTopic, tables: tables, feedHalfLife: configuration.feedHalfLife,
                                 onCommit: { cache.invalidate() })
    }
}
