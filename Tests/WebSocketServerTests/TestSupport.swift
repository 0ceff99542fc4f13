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

/// What both slow-reader tests check once the slow socket's queue has overflowed: the queue kept to
/// its bounds, the fast reader's batches unaffected, and the slow socket closed after a final text
/// that later sends cannot follow.
func expectSlowReaderContained(_ toSlow: WebSocketConnection, maxMessages: Int, fast toFast: WebSocketConnection,
                               reader fast: RawWebSocketClient, batch: Int) async throws {
    #expect(toSlow.queuedMessages <= maxMessages)
    #expect(toSlow.queuedBytes <= 256 * 1024)
    #expect(toSlow.send("one more") == .overflow)
    for round in 0..<5 {
        for index in 0..<batch { #expect(toFast.send("fast \(round)-\(index)") == .queued) }
        let got = try await blocking { try (0..<batch).map { _ in try fast.readMessage() } }
        #expect(got == (0..<batch).map { .text("fast \(round)-\($0)") })
    }
    toSlow.close(after: "{\"event\":\"system\",\"status\":\"error\"}", code: 4000, reason: "slow consumer")
    #expect(toSlow.send("after close") == .closed)
}

/// A server whose queues hold `maxMessages` messages or 256 KB, with a "slow" client reading
/// through a 4 KB receive buffer and a "fast" one, both open: the set-up of the slow-reader tests.
func slowAndFastReaders(maxMessages: Int) async throws
    -> (server: WebSocketServer, delegate: RecordingDelegate, slow: RawWebSocketClient, fast: RawWebSocketClient,
        toSlow: WebSocketConnection, toFast: WebSocketConnection) {
    let delegate = RecordingDelegate()
    let server = try makeServer(delegate) {
        $0.maxQueuedMessages = maxMessages
        $0.maxQueuedBytes = 256 * 1024
    }
    let slow = try await connectClient(server, name: "slow", receiveBuffer: 4096)
    let fast = try await connectClient(server, name: "fast")
    #expect(try await eventually { delegate.opened.count == 2 })
    return (server, delegate, slow, fast, try #require(delegate.connection(named: "slow")), try #require(delegate.connection(named: "fast")))
}
