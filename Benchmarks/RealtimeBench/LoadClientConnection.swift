extension LoadClient {
    /// One client socket's state; owned by the single thread that polls it.
    final class Connection {
        enum State { case handshaking, joining, joined }

        let topic: String
        var state = State.handshaking
        var buffer: [UInt8] = []
        /// Bytes of `buffer` already handled.
        var consumed = 0
        var lastSeq: Int64 = -1

        init(topic: String) {
            self.topic = topic
            buffer.reserveCapacity(4096)
        }

        /// The index just past the upgrade response's blank line, once it arrived.
        func headerEnd() -> Int? {
            guard buffer.count >= 4 else { return nil }
            for index in 3..<buffer.count where buffer[index] == 10 && buffer[index - 1] == 13
                && buffer[index - 2] == 10 && buffer[index - 3] == 13 {
                return index + 1
            }
            return nil
        }

        /// The next complete server frame after `consumed`: opcode, payload start and length.
        /// Server frames are unmasked; the caller advances `consumed`.
        func nextFrame() -> (UInt8, Int, Int)? {
            let available = buffer.count - consumed
            guard available >= 2 else { return nil }
            let opcode = buffer[consumed] & 0x0f
            var length = Int(buffer[consumed + 1] & 0x7f)
            var header = 2
            if length == 126 {
                guard available >= 4 else { return nil }
                length = Int(buffer[consumed + 2]) << 8 | Int(buffer[consumed + 3])
                header = 4
            } else if length == 127 {
                guard available >= 10 else { return nil }
                length = 0
                for index in 2..<10 { length = length << 8 | Int(buffer[consumed + index]) }
                header = 10
            }
            guard available >= header + length else { return nil }
            return (opcode, consumed + header, length)
        }

        /// Drops handled bytes.
        func compact() {
            guard consumed > 0 else { return }
            if consumed == buffer.count {
                buffer.removeAll(keepingCapacity: true)
            } else {
                buffer.removeFirst(consumed)
            }
            consumed = 0
        }
    }
}
