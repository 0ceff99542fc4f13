import Foundation

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
        Data("v1|\(startedAtMillis)|\(clientSessionID)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// `nil` for anything this service did not hand out.
    public init?(encoded: String) {
        var text = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !text.isEmpty, text.count <= 2048 else { return nil }
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text), let plain = String(data: data, encoding: .utf8) else { return nil }
        let parts = plain.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", let millis = Int64(parts[1]), !parts[2].isEmpty else { return nil }
        self.startedAtMillis = millis
        self.clientSessionID = String(parts[2])
    }
}
