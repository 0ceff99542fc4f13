import Foundation
import Synchronization

/// A Python witness client (a script in `Clients/`, or at an absolute path) talking JSON lines
/// over stdin/stdout.
/// Its stdout is read on a dedicated thread; lines arrive through an async stream.
// @unchecked: `Process` and `FileHandle` are not marked Sendable; the process is only started in
// init and then queried or terminated (thread-safe in Foundation), stdout lines sit in a Mutex.
final class PythonClient: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let clientsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Clients")

    private let process: Process
    private let stdin: FileHandle
    /// Lines read from stdout and not yet taken; `finished` once stdout closed.
    private let lines = Shared<(pending: [String], finished: Bool)>(([], false))
    private let stderrText = Shared("")

    init(script: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let python = ProcessInfo.processInfo.environment["PYTHON"] ?? "python3"
        process.arguments = [python, script.hasPrefix("/") ? script : Self.clientsDirectory.appendingPathComponent(script).path] + arguments
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        self.process = process
        self.stdin = input.fileHandleForWriting
        let reader = output.fileHandleForReading
        let lines = self.lines
        let thread = Thread {
            var buffer = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    lines.withLock { $0.pending.append(line) }
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            lines.withLock { $0.finished = true }
        }
        thread.start()
        let errorReader = errors.fileHandleForReading
        let stderrText = self.stderrText
        let errorThread = Thread {
            while true {
                let chunk = errorReader.availableData
                if chunk.isEmpty { break }
                stderrText.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }
        errorThread.start()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    var standardError: String { stderrText.value }

    /// The next stdout line as a JSON object, or a failure after `timeout`.
    func next(timeout: Duration = .seconds(60)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        var line: String?
        while true {
            let (next, finished) = lines.withLock { state -> (String?, Bool) in
                state.pending.isEmpty ? (nil, state.finished) : (state.pending.removeFirst(), false)
            }
            if let next { line = next; break }
            if finished { break }
            guard ContinuousClock.now < deadline else {
                throw Failure(description: "no answer within \(timeout); stderr: \(standardError)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        guard let line else { throw Failure(description: "client exited; stderr: \(standardError)") }
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw Failure(description: "not a JSON object: \(line)")
        }
        return object
    }

    func write(_ command: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: command)
        try stdin.write(contentsOf: data + Data("\n".utf8))
    }

    func terminate() {
        if process.isRunning { process.terminate() }
    }

    func waitForExit(timeout: Duration = .seconds(60)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        return process.isRunning ? nil : process.terminationStatus
    }
}

/// A value shared between threads.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value { mutex.withLock { $0 } }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// `Clients/ws_driver.py`: a raw WebSocket client (the `websockets` package).
final class RawSocket: Sendable {
    let client: PythonClient
    let serializer: String

    /// Connects; throws with the status when the upgrade was refused (see `connectOrRefusal`).
    init(url: String, maxQueue: Int = 1024, receiveBuffer: Int? = nil) async throws {
        client = try PythonClient(script: "ws_driver.py", arguments: [url, "--max-queue", String(maxQueue)]
                                  + (receiveBuffer.map { ["--rcvbuf", String($0)] } ?? []))
        serializer = url.contains("vsn=2.0.0") ? "2.0.0" : "1.0.0"
        let first = try await client.next()
        guard first["open"] as? Bool == true else { throw PythonClient.Failure(description: "refused: \(first)") }
    }

    /// Opens a socket and returns nil, or the refusal status and body.
    static func refusal(url: String) async throws -> (status: Int, body: String)? {
        let client = try PythonClient(script: "ws_driver.py", arguments: [url])
        let first = try await client.next()
        client.terminate()
        guard let status = first["rejected"] as? Int else { return nil }
        return (status, first["body"] as? String ?? "")
    }

    func send(_ text: String) async throws {
        try client.write(["send": text])
        let answer = try await client.next()
        guard answer["ok"] as? Bool == true else { throw PythonClient.Failure(description: "send failed: \(answer)") }
    }

    func send(json: Any) async throws {
        try await send(String(decoding: try JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]), as: UTF8.self))
    }

    enum Received {
        case frame(Any)
        case timeout
        case closed(code: Int?, reason: String)
    }

    func receive(timeout: Double = 10) async throws -> Received {
        try client.write(["recv": timeout])
        let answer = try await client.next(timeout: .seconds(timeout + 10))
        if let text = answer["frame"] as? String {
            return .frame(try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]))
        }
        if answer["timeout"] != nil { return .timeout }
        return .closed(code: answer["closed"] as? Int, reason: answer["reason"] as? String ?? "")
    }

    /// The next frame, failing on a timeout or close.
    func frame(timeout: Double = 30) async throws -> Any {
        switch try await receive(timeout: timeout) {
        case .frame(let value): return value
        case .timeout: throw PythonClient.Failure(description: "no frame within \(timeout) s")
        case .closed(let code, let reason): throw PythonClient.Failure(description: "closed \(code ?? -1) \(reason)")
        }
    }

    /// Reads until the server closes the socket (or `timeout` passes without a frame):
    /// whether a `system` error frame came first, and the close code.
    func untilClosed(timeout: Double = 10) async throws -> (sawSystemError: Bool, closeCode: Int?) {
        var sawSystemError = false
        while true {
            switch try await receive(timeout: timeout) {
            case .frame(let frame):
                if let object = frame as? [String: Any], object["event"] as? String == "system",
                   (object["payload"] as? [String: Any])?["status"] as? String == "error" { sawSystemError = true }
            case .closed(let code, _):
                return (sawSystemError, code)
            case .timeout:
                return (sawSystemError, nil)
            }
        }
    }

    func close() {
        try? client.write(["close": true])
        client.terminate()
    }
}
