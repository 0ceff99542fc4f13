import Foundation
import Hashing

/// The position after the last session of a history page: its start (epoch ms) and id.
/// Opaque to clients: base64url of `v1|<startedAtMillis>|<clientSessionId>`.
public struct HistoryCursor: Hashable, Sendable {
    public var startedAtMillis: Int64
    public var clientSessionID: String

    public init(startedAtMillis: Int64, clientSessionID: String) {
        self.startedAtMillis = startedAtMillis
        self.clientSessionID = clientSessionID
    }

    public var encoded: String {
        Base64URL.encode(Array("v1|\(startedAtMillis)|\(clientSessionID)".utf8))
    }

    /// `nil` for anything this service did not hand out.
    public init?(encoded: String) {
        guard !encoded.isEmpty, encoded.utf8.count <= 2048, let bytes = Base64URL.decode(encoded[...]),
              let plain = String(validating: bytes, as: UTF8.self) else { return nil }
        let parts = plain.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", let millis = Int64(parts[1]), !parts[2].isEmpty else { return nil }
        self.startedAtMillis = millis
        self.clientSessionID = String(parts[2])
    }
}
