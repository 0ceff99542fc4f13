/// The key of a PostgreSQL advisory lock named by `name`: FNV-1a of its UTF-8 bytes, so each
/// named lock (a service's erasure fence, an outbox's publisher) gets a stable key of its own.
public enum AdvisoryLockKey {
    public static func named(_ name: String) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            h ^= UInt64(byte)
            h = h &* 0x0100_0000_01b3
        }
        return Int64(bitPattern: h)
    }
}
