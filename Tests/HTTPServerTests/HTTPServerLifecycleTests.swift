import Foundation
import HTTPRouting
import HTTPServer
import ServiceLogging
import Testing

@Suite("HTTPServer lifecycle", .serialized, .timeLimit(.minutes(2)))
struct HTTPServerLifecycleTests {
    @Test("a slow request in flight at shutdown gets its full 200; new connections are refused; keep-alive requests get 503")
    func gracefulShutdown() async throws {
        let probe = ConcurrencyProbe()
        // The slow request outlasts the checks below by seconds, so a loaded machine cannot
        // reorder them.
        let (server, port) = try makeServer(router: makeRouter(probe: probe, slow: .seconds(3)))
        // An idle keep-alive connection opened before shutdown.
        let idle = try await onThread { () -> RawHTTPConnection in
            let connection = try RawHTTPConnection(port: port)
            guard try connection.request("GET", "/small").status == 200 else { throw RawHTTPConnection.Failure.malformed("warm-up") }
            return connection
        }
        let slow = Task { try await onThread { try RawHTTPConnection(port: port).request("GET", "/slow") } }
        while probe.started == 0 { try await Task.sleep(for: .milliseconds(5)) }

        let clock = ContinuousClock()
        let started = clock.now
        let shutdown = Task { await server.shutdown(gracePeriod: .seconds(20)) }
        try await Task.sleep(for: .milliseconds(100))

        let refused = try await onThread { () -> Bool in
            do { _ = try RawHTTPConnection(port: port); return false } catch RawHTTPConnection.Failure.connect(let code) {
                return code == ECONNREFUSED
            }
        }
        let drained = try await onThread { () -> (RawHTTPConnection.Response, Bool) in
            let response = try idle.request("GET", "/small")
            return (response, idle.isClosedByPeer())
        }
        let response = try await slow.value
        await shutdown.value

        #expect(response.status == 200)
        #expect(response.text == "slow done")
        #expect(refused)
        #expect(drained.0.status == 503)
        #expect(drained.0.errorCode == "SHUTTING_DOWN")
        #expect(drained.1, "the connection is closed after the 503")
        #expect(started.duration(to: clock.now) < .seconds(15), "shutdown finished once the slow request was done, not at the grace period")
        #expect(!server.isRunning)
        #expect(server.port == port, "the bound port stays readable after shutdown")
    }

    @Test("a handler still running when the grace period ends is answered 503 SHUTTING_DOWN, and has ended when shutdown returns")
    func gracePeriodExpires() async throws {
        let probe = ConcurrencyProbe()
        let (server, port) = try makeServer(router: makeRouter(probe: probe, slow: .seconds(20)))
        let slow = Task { try await onThread { try RawHTTPConnection(port: port).request("GET", "/slow") } }
        while probe.started == 0 { try await Task.sleep(for: .milliseconds(5)) }

        let clock = ContinuousClock()
        let started = clock.now
        await server.shutdown(gracePeriod: .milliseconds(200))
        let elapsed = started.duration(to: clock.now)
        let response = try await slow.value

        #expect(response.status == 503)
        #expect(response.errorCode == "SHUTTING_DOWN")
        #expect(elapsed < .seconds(3))
        #expect(probe.current == 0, "the abandoned handler's task outlived the server")
    }

    @Test("run() serves until its task is cancelled, then stops listening")
    func runUntilCancelled() async throws {
        let server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, shutdownGracePeriod: .seconds(1)),
                                router: makeRouter(), logger: .disabled)
        let running = Task { try await server.run() }
        while !server.isRunning { try await Task.sleep(for: .milliseconds(5)) }
        let boundPort = server.port
        #expect(boundPort > 0)
        let before = try await onThread { try RawHTTPConnection(port: boundPort).request("GET", "/small").status }
        running.cancel()
        try await running.value
        let refused = try await onThread { () -> Bool in
            do { _ = try RawHTTPConnection(port: boundPort); return false } catch { return true }
        }
        #expect(before == 200)
        #expect(refused)
        #expect(throws: HTTPServerError.self) { try server.start() }
    }

    @Test("binding a port that is in use fails with a bind error naming the port and the cause, whether or not libmicrohttpd's message is logged")
    func bindFailure() async throws {
        let (first, port) = try makeServer()
        defer { Task { await first.shutdown(gracePeriod: .seconds(1)) } }
        // Logged to standard error as a service does: the write is what changed errno.
        for logger in [Logger.disabled, Logger(label: "http", level: .warning, sink: .standardError)] {
            let second = HTTPServer(configuration: .init(host: "127.0.0.1", port: port), router: Router(), logger: logger)
            do {
                try second.start()
                Issue.record("second bind on \(port) succeeded")
            } catch {
                #expect(error.code == .bindFailed)
                #expect(error.port == port)
                #expect(error.errno == EADDRINUSE)
                #expect(error.message.contains(String(cString: strerror(EADDRINUSE))), "\(error.message)")
                #expect(error.isRetriable)
            }
        }
    }

    @Test("an unparsable host is a configuration error")
    func invalidHost() {
        let server = HTTPServer(configuration: .init(host: "not a host", port: 0), router: Router(), logger: .disabled)
        #expect { try server.start() } throws: { ($0 as? HTTPServerError)?.code == .invalidConfiguration }
    }

    @Test("a client that hangs up while its handler runs does not keep shutdown waiting")
    func clientDisconnectsMidRequest() async throws {
        let probe = ConcurrencyProbe()
        let (server, port) = try makeServer(router: makeRouter(probe: probe, slow: .milliseconds(200)))
        try await onThread {
            let connection = try RawHTTPConnection(port: port)
            try connection.sendRequest("GET", "/slow")
        }  // the connection is closed here, before the response
        while probe.started == 0 { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(400))
        let next = try await onThread { try RawHTTPConnection(port: port).request("GET", "/small") }
        let clock = ContinuousClock()
        let started = clock.now
        await server.shutdown(gracePeriod: .seconds(5))
        #expect(next.status == 200)
        #expect(started.duration(to: clock.now) < .seconds(2), "no request was left counted as in flight")
    }

    @Test("a server released without shutdown stops listening")
    func releasedServerStops() async throws {
        var port = 0
        do {
            let (server, boundPort) = try makeServer()
            port = boundPort
            let status = try await onThread { try RawHTTPConnection(port: boundPort).request("GET", "/small").status }
            #expect(status == 200)
            _ = server
        }
        let refused = try await onThread { [port] () -> Bool in
            do { _ = try RawHTTPConnection(port: port); return false } catch { return true }
        }
        #expect(refused)
    }
}
