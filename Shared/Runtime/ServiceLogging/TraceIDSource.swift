import Glibc
import Synchronization

/// Random words for trace and span ids, drawn from the system's generator 4 KiB at a time
/// (`arc4random_buf`: one `getrandom` call) instead of one system call per 8 bytes — every HTTP
/// request starts or continues a trace. The ids stay the system generator's bytes, each used once.
final class TraceIDSource: Sendable {
    private struct Pool: ~Copyable {
        var words: [UInt64]
        var next: Int

        init(count: Int) {
            words = Array(repeating: 0, count: count)
            next = count  // drawn at first use
        }
    }

    static let shared = TraceIDSource()

    private let pool = Mutex(Pool(count: 512))

    /// Fills `words` with random words.
    func fill(_ words: UnsafeMutableBufferPointer<UInt64>) {
        pool.withLock { pool in
            for index in words.indices {
                if pool.next == pool.words.count {
                    pool.words.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
                    pool.next = 0
                }
                words[index] = pool.words[pool.next]
                pool.next += 1
            }
        }
    }
}
