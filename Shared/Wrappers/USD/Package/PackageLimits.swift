/// Size limits that guard against absurd declarations and zip bombs.
public struct PackageLimits: Sendable {
    /// Largest single entry accepted, in bytes.
    public var maxEntrySize: Int
    /// Largest sum of entry sizes accepted, in bytes.
    public var maxTotalSize: Int
    /// Most entries accepted in the central directory.
    public var maxEntries: Int

    public init(maxEntrySize: Int = 1 << 30, maxTotalSize: Int = 2 << 30, maxEntries: Int = 100_000) {
        self.maxEntrySize = maxEntrySize
        self.maxTotalSize = maxTotalSize
        self.maxEntries = maxEntries
    }

    public static let `default` = PackageLimits()
}
