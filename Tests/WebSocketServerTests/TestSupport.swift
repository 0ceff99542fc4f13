import Foundation
import HTTPRouting
import ServiceLogging
import Synchronization
import Testing
@testable import WebSocketServer

/// Records everything the server tells its delegate; optionally echoes text back.
final class RecordingDelegate: WebSocketServerDelegate {
    struct Events {
        var requests: [WebSocketUpgradeRequest] = []
        var opened: [WebSocketConnection] = []
        var received: [UInt64: [String]] = [:]
        var closed: Set<UInt64> = []
    }

    let events = Mutex(Events())
    let echo: Bool
    let decide: @Sendable (WebSocketUpgradeRequest) -> WebSocketAcceptDecision

    init(echo: Bool = false, decide: @escaping @Sendable (WebSocketUpgradeRequest) -> WebSocketAcceptDecision = { _ in .accept }) {
        self.echo = echo
        self.decide = decide
    }

    func shouldAccept(_ request: WebSocketUpgradeRequest) -> WebSocketAcceptDecision {
        events.withLock { $0.requests.append(request) }
        return decide(request)
    }

    func connectionOpened(_ connection: WebSocketConnection) {
        events.withLock { $0.opened.append(connection) }
    }

    func connection(_ connection: WebSocketConnection, didReceiveText text: String) {
        events.withLock { $0.received[connection.id, default: []].append(text) }
        if echo { _ = connection.send(text) }
    }

    func connectionClosed(_ connection: WebSocketConnection) {
        _ = events.withLock { $0.closed.insert(connection.id) }
    }

    var opened: [WebSocketConnection] { events.withLock { $0.opened } }
    var closed: Set<UInt64> { events.withLock { $0.closed } }

    /// The connection whose upgrade query had `name=<name>`.
    func connection(named name: String) -> WebSocketConnection? {
        opened.first { $0.request.query["name"] == name }
    }
}

/// A started server on an ephemeral loopback port.
func makeServer(_ delegate: RecordingDelegate, router: Router? = nil,
                configure: (inout WebSocketServerConfiguration) -> Void = { _ in }) throws -> WebSocketServer {
    var configuration = WebSocketServerConfiguration(host: "127.0.0.1", port: 0, path: "/realtime/v1/websocket")
    configure(&configuration)
    let server = WebSocketServer(configuration: configuration, delegate: delegate, httpRouter: router, logger: .disabled)
    try server.start()
    return server
}

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Connects a raw client and completes the handshake (off the cooperative pool).
func connectClient(_ server: WebSocketServer, name: String, receiveBuffer: Int32? = nil) async throws -> RawWebSocketClient {
    let port = server.port
    return try await blocking {
        let client = try RawWebSocketClient(port: port, receiveBuffer: receiveBuffer)
        guard try client.handshake(target: "/realtime/v1/websocket?name=\(name)") else {
            throw RawWebSocketClient.ClientError(description: "handshake refused: \(client.handshakeStatus)")
        }
        return client
    }
}

struct ProcessOutput: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs a command to completion (off the cooperative pool).
func runProcess(_ executable: String, _ arguments: [String]) async throws -> ProcessOutput {
    try await blocking {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ProcessOutput(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                             stderr: String(decoding: stderr, as: UTF8.self))
    }
}
