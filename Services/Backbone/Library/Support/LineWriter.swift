import Foundation

/// Buffered standard output for JSON lines: one write per 64 KiB rather than per record.
/// Used by one task at a time (the command's), so it needs no lock.
final class LineWriter {
    private var buffer: [UInt8] = []
    private let handle: FileHandle
    private let threshold = 64 * 1024

    init(handle: FileHandle = .standardOutput) {
        self.handle = handle
        buffer.reserveCapacity(threshold + 4096)
    }

    func write(line: [UInt8]) {
        buffer += line
        buffer.append(0x0A)
        if buffer.count >= threshold { flush() }
    }

    func write(_ text: String) {
        buffer += Array(text.utf8)
        if buffer.count >= threshold { flush() }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        handle.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }

    deinit { flush() }
}
