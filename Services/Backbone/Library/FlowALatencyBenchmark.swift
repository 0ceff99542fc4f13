import Auth
import Contracts
import Foundation
import Logging
import RealtimeNotifier
import Synchronization

/// Flow A's latency as the app feels it: the time from the 202 of upload-complete to the
/// `ready` broadcast received on the realtime WebSocket, over UPLOADS uploads of one scan, one
/// after another, against a running system (the endpoints of `backbone demo`: the environment
/// or `.backbone/dev.env`). `transcode-bench --flow-a` runs it; `Benchmarks/transcode/bench.sh
/// latency` starts the stack for it.
///
/// One socket joins `user:{userId}` before the first upload: the owner's channel gets every
/// status of every version of the user from the same sequencer transaction as `room:{roomId}`,
/// so the broadcast is live (never a replay) and no join sits inside the timed interval. The
/// 202 is stamped when its response has been read; the `ready` when its frame has been decoded.
public enum FlowALatencyBenchmark {
    public struct Sample: Sendable {
        public var versionID: String
        public var seconds: Double
        public var event: String
    }

    /// Runs `warmup` untimed uploads, then `uploads` timed ones; prints one line per upload and a
    /// summary line `flow-a uploads=<n> bytes=<n> p50=<s> p99=<s> max=<s> min=<s> failed=<n>`.
    public static func run(uploads: Int, warmup: Int = 2, package: String, roomplan: String,
                           logger: Logger) async throws -> [Sample] {
        let values = DevEnvironment.resolved()
        guard let secret = values["JWT_SECRET"], !secret.isEmpty else {
            throw CommandLineArguments.UsageError(description: "JWT_SECRET is not set (start `backbone dev` to write .backbone/dev.env)")
        }
        let endpoints = DemoCommand.Endpoints(ingest: values["INGEST_URL"] ?? "http://127.0.0.1:8080",
                                              progress: values["PROGRESS_URL"] ?? "http://127.0.0.1:8081",
                                              analytics: values["ANALYTICS_URL"] ?? "http://127.0.0.1:8082",
                                              transcode: values["TRANSCODE_URL"] ?? "http://127.0.0.1:8083",
                                              realtime: values["REALTIME_URL"] ?? "http://127.0.0.1:8084")
        let user = "bench-\(UUID().uuidString.prefix(8).lowercased())"
        let session = DemoSession(endpoints: endpoints, scan: .init(package: package, roomplan: roomplan),
                                  codec: JWTCodec(secret: secret), user: user, logger: logger)
        let files = try session.readScan()
        let realtime = try await session.openRealtime()
        try await realtime.join("user:\(user)")

        // Receipt times of each version's final event, stamped by the reader as frames arrive.
        let finals = Mutex<[String: (event: String, at: ContinuousClock.Instant)]>([:])
        let reader = Task {
            for await event in realtime.events {
                guard case .broadcast(let broadcast) = event, broadcast.event == "ready" || broadcast.event == "failed",
                      let version = broadcast.payload["version_id"]?.stringValue else { continue }
                let now = ContinuousClock.now
                finals.withLock { $0[version] = (broadcast.event, now) }
            }
        }
        defer { reader.cancel() }

        var samples: [Sample] = []
        for index in 0..<(warmup + uploads) {
            let request = try await session.uploadScan(files, quiet: true)
            _ = try await session.completeUpload(request)
            let accepted = ContinuousClock.now
            let deadline = accepted + .seconds(60)
            var final: (event: String, at: ContinuousClock.Instant)?
            while final == nil && ContinuousClock.now < deadline {
                final = finals.withLock { $0[request.versionId] }
                if final == nil { try await Task.sleep(for: .milliseconds(2)) }
            }
            guard let final else {
                throw CommandError(code: .timedOut, message: "no ready or failed for version \(request.versionId) within 60 s",
                                   context: "flow-a benchmark", isRetriable: true)
            }
            let elapsed = final.at - accepted
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let timed = index >= warmup
            print(String(format: "%@ %d: %@ after %.3f s", timed ? "upload" : "warm-up", timed ? index - warmup + 1 : index + 1,
                         final.event, seconds))
            if timed { samples.append(Sample(versionID: request.versionId, seconds: seconds, event: final.event)) }
        }
        await realtime.close()

        let sorted = samples.map(\.seconds).sorted()
        func percentile(_ p: Double) -> Double { sorted[max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        print(String(format: "flow-a uploads=%d bytes=%d p50=%.3f p99=%.3f max=%.3f min=%.3f failed=%d", sorted.count,
                     files.usdz.count, percentile(0.5), percentile(0.99), sorted.last ?? 0, sorted.first ?? 0,
                     samples.filter { $0.event != "ready" }.count))
        return samples
    }
}
