import ServiceRuntime
import Settings

/// Settings of the room catalog (hosted by the transcode worker).
public struct CatalogConfiguration: Sendable {
    /// The catalog projection's own consumer group on the requests and status topics.
    public var groupID: String = "room-catalog"
    /// A C-grade room ranks in the feed like a room this much older (weight × 0.5 on a
    /// recency score that halves every `feedHalfLife`; seed `002_*` §7.3).
    public var feedHalfLife: Duration = .seconds(24 * 3600)
    /// The most rows one answer holds (a larger `limit` is cut to it).
    public var maxLimit: Int = 100
    /// How long a rendered answer is reused while the read model has not changed (0 = never).
    public var cacheTTL: Duration = .seconds(1)
    /// The most answers kept.
    public var cacheEntries: Int = 10_000
    /// The longest lifetime a Storage signed URL may be given (`expiresIn`, seconds).
    public var signedURLMaxSeconds: Int = 7 * 24 * 3600

    public init() {}

    /// `CATALOG_GROUP_ID`, `CATALOG_FEED_HALF_LIFE_HOURS`, `CATALOG_MAX_LIMIT`, `CATALOG_CACHE_TTL_MS`,
    /// `CATALOG_CACHE_ENTRIES`, `CATALOG_SIGNED_URL_MAX_SECONDS`.
    public static func read(from env: inout EnvironmentReader) -> CatalogConfiguration {
        var c = CatalogConfiguration()
        c.groupID = env.string("CATALOG_GROUP_ID", default: c.groupID)
        c.feedHalfLife = .seconds(env.int("CATALOG_FEED_HALF_LIFE_HOURS", default: 24, range: 1...87_600) * 3600)
        c.maxLimit = env.int("CATALOG_MAX_LIMIT", default: c.maxLimit, range: 1...10_000)
        c.cacheTTL = env.milliseconds("CATALOG_CACHE_TTL_MS", default: c.cacheTTL)
        c.cacheEntries = env.int("CATALOG_CACHE_ENTRIES", default: c.cacheEntries, range: 0...1_000_000)
        c.signedURLMaxSeconds = env.int("CATALOG_SIGNED_URL_MAX_SECONDS", default: c.signedURLMaxSeconds, range: 1...31_536_000)
        return c
    }
}
