import CWebSockets

/// An outgoing text message, encoded once and shared by every connection it is sent to.
///
/// The bytes live in one allocation with `LWS_PRE` bytes of headroom in front, so the service
/// thread hands them to `lws_write` as they are: no copy per connection, neither when queued
/// nor when written. Sending the same frame to many connections (a broadcast) costs one
/// reference per queue.
///
/// `@unchecked Sendable`: the payload is written once, in `init`, and never changes. The
/// headroom is written only by lws on the service thread (the WebSocket header of each
/// `lws_write`, identical for every connection since server frames are not masked and the
/// server negotiates no extension); no other thread reads it.
public final class WebSocketFrame: @unchecked Sendable {
    /// Payload bytes (the UTF-8 text).
    public let count: Int
    private let storage: UnsafeMutablePointer<UInt8>

    static let headroom = Int(cws_pre())

    /// Encodes `text` as UTF-8.
    public init(text: String) {
        var text = text
        let count = text.utf8.count
        self.count = count
        storage = .allocate(capacity: Self.headroom + count)
        text.withUTF8 { utf8 in
            if let base = utf8.baseAddress { (storage + Self.headroom).initialize(from: base, count: count) }
        }
    }

    /// Copies `bytes` (which must be valid UTF-8: it is sent as a text frame).
    public init<Bytes: Collection<UInt8>>(utf8 bytes: Bytes) {
        let count = bytes.count
        self.count = count
        storage = .allocate(capacity: Self.headroom + count)
        _ = UnsafeMutableBufferPointer(start: storage + Self.headroom, count: count).initialize(from: bytes)
    }

    deinit { storage.deallocate() }

    /// The payload, with `LWS_PRE` writable bytes before it (service thread only).
    var payload: UnsafeMutablePointer<UInt8> { storage + Self.headroom }

    /// Bytes of the frame on the wire: the payload and its header (server frames carry no mask).
    var wireCount: Int { Self.headerCount(payload: count) + count }

    /// Length of an unmasked frame header for a payload of `count` bytes (RFC 6455 §5.2).
    static func headerCount(payload count: Int) -> Int {
        count < 126 ? 2 : count <= 0xFFFF ? 4 : 10
    }

    /// Writes this frame (a final text frame: header, then payload) at `destination`, which
    /// must hold `wireCount` bytes; returns the bytes written. The same bytes `lws_write`
    /// sends for one `LWS_WRITE_TEXT` when no extension is negotiated, as here.
    func encode(into destination: UnsafeMutablePointer<UInt8>) -> Int {
        destination[0] = 0x81  // FIN, opcode 1 (text)
        var header = 2
        switch count {
        case ..<126:
            destination[1] = UInt8(count)
        case ...0xFFFF:
            destination[1] = 126
            destination[2] = UInt8(truncatingIfNeeded: count >> 8)
            destination[3] = UInt8(truncatingIfNeeded: count)
            header = 4
        default:
            destination[1] = 127
            for index in 0..<8 { destination[2 + index] = UInt8(truncatingIfNeeded: UInt64(count) >> (56 - 8 * index)) }
            header = 10
        }
        (destination + header).update(from: payload, count: count)
        return header + count
    }

    /// The payload as text (tests, diagnostics).
    public var text: String {
        String(decoding: UnsafeBufferPointer(start: storage + Self.headroom, count: count), as: UTF8.self)
    }
}
