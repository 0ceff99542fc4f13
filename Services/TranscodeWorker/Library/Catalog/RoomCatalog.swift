import Auth
import Contracts
import HTTPRouting
import Lifecycle
import Postgres
import ServiceRuntime

/// The room catalog as a whole: its projection (fed by the uploads, requests and status
/// topics), its PostgREST routes, sharing the answer cache that every committed batch empties,
/// and the Storage paths of the room files it lists.
public struct RoomCatalog: Sendable {
    let store: CatalogStore
    let cache: CatalogAnswerCache
    let routes: CatalogRoutes
    let storage: StorageRoutes
    let configuration: CatalogConfiguration

    /// - Parameter linkTTL: how long the presigned URLs of an answer are valid; cached answers
    ///   live at most half of it.
    public init(database: PostgresClient, authenticator: RequestAuthenticator, links: any OutputLinks,
                configuration: CatalogConfiguration, linkTTL: Duration, tables: CatalogTables = .live) {
        self.configuration = configuration
        store = CatalogStore(database: database, tables: tables)
        cache = CatalogAnswerCache(ttl: min(configuration.cacheTTL, linkTTL / 2), capacity: configuration.cacheEntries)
        routes = CatalogRoutes(store: store, authenticator: authenticator, links: links, cache: cache, maxLimit: configuration.maxLimit)
        // A redirect is reused for at most half the link's lifetime (and 5 minutes), so the
        // presigned URL it names is always valid for a while when it is followed.
        let redirectMaxAge = Int(min(linkTTL / 2, .seconds(300)).wholeSeconds)
        storage = StorageRoutes(store: store, authenticator: authenticator, links: links,
                                signer: StorageURLSigner(secret: authenticator.codec.secret),
                                maxSignedSeconds: configuration.signedURLMaxSeconds, redirectMaxAge: redirectMaxAge)
    }

    public func router() -> Router {
        var router = routes.router()
        router.merge(storage.router())
        return router
    }

    /// The read model's projection; its commits invalidate the cached answers.
    public func projection(requestsTopic: String, uploadsTopic: String = Topics.roomUploads,
                           tables: CatalogTables = .live) -> CatalogProjection {
        let cache = self.cache
        return CatalogProjection(requestsTopic: requestsTopic, uploadsTopic: uploadsTopic, tables: tables, feedHalfLife: configuration.feedHalfLife,
                                 onCommit: { cache.invalidate() })
    }
}
