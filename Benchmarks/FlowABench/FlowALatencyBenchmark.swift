import Auth
import BackboneCLI
import Contracts
import Foundation
import JSON
import Lifecycle
import RealtimeNotifier
import ServiceLogging
import Synchronization

/// Flow A's latency as the app feels it: the time from the 202 of upload-complete to the
/// `ready` broadcast received on the realtime WebSocket, over UPLOADS uploads of one scan, one
/// after another, against a running system (the endpoints of `backbone demo`: the environment
/// or `.backbone/dev.env`). `flow-a-bench` runs it; `Benchmarks/transcode/bench.sh
/// latency` starts the stack for it.
///
/// One socket joins `user:{userId}` before the first upload: the owner's channel gets every
/// status of every version of the user from the same sequencer transaction as `room:{roomId}`,
/// so the broadcast is live (never a replay) and no join sits inside the timed interval. The
/// 202 is stamped when its response has been read; the `ready` when its frame has been decoded.
enum FlowALatencyBenchmark {
    /// Why a run could not go on (no settings, or a version that never finished).
    struct Stopped: Error, CustomStringConvertible {
        let description: String
    }

    struct Sample: Sendable {
        var versionID: String
        var seconds: Double
        var event: String
    }

    /// Runs `warmup` untimed uploads, then `uploads` timed ones; prints one line per upload and a
    /// summary line `flow-a uploads=<n> bytes=<n> p50=<s> p99=<s> max=<s> min=<s> failed=<n>`.
    static func run(uploads: Int, warmup: Int = 2, package: String, roomplan: String,
                           logger: Logger) async throws -> [Sample] {
        let values = DevEnvironment.resolved()
        guard let secret = values["JWT_SECRET"], !secret.isEmpty else {
            throw Stopped(description: "JWT_SECRET is not set (start `backbone dev` to write .backbone/dev.env)")
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

        // Receipt times of each version's events, stamped by the reader as frames arrive: the
        // final one ends the timed interval, the stages say where the time went.
        let finals = Mutex<[String: (event: String, at: ContinuousClock.Instant)]>([:])
        let stages = Mutex<[String: [(stage: String, at: ContinuousClock.Instant)]]>([:])
        let reader = Task {
            for await event in realtime.events {
                guard case .broadcast(let broadcast) = event, let version = broadcast.payload["version_id"]?.stringValue else { continue }
                let now = ContinuousClock.now
                let stage = broadcast.payload["stage"]?.stringValue ?? broadcast.payload["status"]?.stringValue ?? broadcast.event
                stages.withLock { $0[version, default: []].append((stage, now)) }
                if broadcast.event == "ready" || broadcast.event == "failed" { finals.withLock { $0[version] = (broadcast.event, now) } }
            }
        }
        defer { reader.cancel() }

        var samples: [Sample] = []
        var stageTimes: [String: [Double]] = [:]
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
                throw Stopped(description: "flow-a benchmark: no ready or failed for version \(request.versionId) within 60 s")
            }
            func seconds(_ elapsed: Duration) -> Double {
                elapsed.timeInterval
            }
            let total = seconds(final.at - accepted)
            let timed = index >= warmup
            // When each status arrived, after the 202: queued, every stage, ready.
            let arrivals = stages.withLock { $0[request.versionId] ?? [] }
                .map { String(format: "%@ %+.3f", $0.stage, seconds($0.at - accepted)) }.joined(separator: ", ")
            print(String(format: "%@ %d: %@ after %.3f s (%@)", timed ? "upload" : "warm-up", timed ? index - warmup + 1 : index + 1,
                         final.event, total, arrivals))
            if timed {
                samples.append(Sample(versionID: request.versionId, seconds: total, event: final.event))
                for (stage, at) in stages.withLock({ $0[request.versionId] ?? [] }) { stageTimes[stage, default: []].append(seconds(at - accepted)) }
            }
        }
        // Median arrival of each status after the 202, in pipeline order.
        let order = ["queued", "downloading", "validating", "parsing", "layering", "exporting", "thumbnail", "ready", "failed"]
        let medians = order.compactMap { stage -> String? in
            guard let times = stageTimes[stage]?.sorted(), !times.isEmpty else { return nil }
            return String(format: "%@ %.3f", stage, times[times.count / 2])
        }
        print("flow-a median arrival after the 202: " + medians.joined(separator: ", "))
        await realtime.close()

        let sorted = samples.map(\.seconds).sorted()
        func percentile(_ p: Double) -> Double { sorted[max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        print(String(format: "flow-a uploads=%d bytes=%d p50=%.3f p99=%.3f max=%.3f min=%.3f failed=%d", sorted.count,
                     files.usdz.count, percentile(0.5), percentile(0.99), sorted.last ?? 0, sorted.first ?? 0,
                     samples.filter { $0.event != "ready" }.count))
        return samples
    }
}
