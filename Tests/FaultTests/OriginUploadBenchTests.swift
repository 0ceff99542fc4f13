import Auth
import BackboneTestSupport
import DevInfrastructure
import Foundation
import ObjectStore
import Testing

/// The memory and the throughput of uploads through the origin (`docs/benchmarks.md`): ingest as
/// its own process (the executable from `.build`), SeaweedFS, the embedded broker, PostgreSQL;
/// `curl` PUTs a 50 MiB scan to upload-init's `presigned_usdz` on the origin and, in the same
/// rounds, the same bytes straight to a presigned PUT of the store. Prints the figures.
/// `ORIGIN_UPLOAD_BENCH_ROUNDS` rounds (default 3).
@Suite("Uploads through the origin: ingest's RSS and throughput against a direct PUT to the store", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(10)))
struct OriginUploadBenchTests {
    static func rss(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0  // kB
    }

    /// Seconds `curl` took to PUT `file` to `url`, and the status.
    static func put(_ url: String, file: String) throws -> (seconds: Double, status: Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-H", "Expect:", "-X", "PUT",
                             "--data-binary", "@\(file)", url]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let fields = String(decoding: data, as: UTF8.self).split(separator: " ")
        return (Double(fields.last ?? "") ?? 0, Int(fields.first ?? "") ?? 0)
    }

    @Test("a 50 MiB PUT through the origin raises ingest's RSS by a few MB at most and runs at ≥ 80 % of a direct PUT's throughput (printed)")
    func memoryAndThroughput() async throws {
        try await SeaweedFSFixture.with { s3 in try await FaultStack.with("origin-bench", s3: s3) { stack in
            let base = "http://127.0.0.1:\(stack.ports["ingest"]!)"
            stack.extraEnvironment["ingest"] = ["APP_BASE_URL": base, "INGEST_MONTHLY_UPLOAD_QUOTA_BYTES": String(1 << 34)]
            let ingest = try stack.spawn("ingest")
            #expect(await stack.waitReady(["ingest"]) != nil, "\(stack.logs)")
            let pid = ingest.process.processIdentifier
            let size = 50 << 20
            let file = NSTemporaryDirectory() + "origin-bench-\(UInt32.random(in: 0...UInt32.max))"
            #expect(FileManager.default.createFile(atPath: file, contents: Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) })))
            defer { try? FileManager.default.removeItem(atPath: file) }
            let store = S3ObjectStore(configuration: s3)
            let token = stack.codec.issue(userID: "bench")
            let rounds = Int(ProcessInfo.processInfo.environment["ORIGIN_UPLOAD_BENCH_ROUNDS"] ?? "") ?? 3

            var origin: [Double] = [], direct: [Double] = [], growth: [Int] = []
            for round in 0..<rounds {
                let body = try JSONSerialization.data(withJSONObject: ["title": "bench", "tags": [], "bytes_source": size, "bytes_json": 10])
                let answer = try #require(await stack.http("POST", "ingest", "/functions/v1/upload-init", token: token, body: body))
                let init_ = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any] ?? [:]
                let url = try #require(init_["presigned_usdz"] as? String, "\(String(decoding: answer.body, as: UTF8.self))")
                #expect(url.hasPrefix(base + "/storage/v1/object/upload/sign/"))

                let before = Self.rss(pid)
                let peak = PeakSampler(pid: pid)
                let (seconds, status) = try Self.put(url, file: file)
                let highest = peak.stop()
                #expect(status == 200)
                origin.append(Double(size) / seconds / 1_048_576)
                growth.append(max(0, highest - before))

                let presigned = try store.presignPut(key: "bench/direct-\(round)", contentLength: Int64(size), contentType: nil,
                                                     expiresIn: .seconds(600))
                let (directSeconds, directStatus) = try Self.put(presigned.url, file: file)
                #expect(directStatus == 200)
                direct.append(Double(size) / directSeconds / 1_048_576)
            }
            let ratio = origin.reduce(0, +) / direct.reduce(0, +)
            print("origin-upload-bench: 50 MiB PUT, \(rounds) rounds; origin MiB/s \(origin.map { String(format: "%.1f", $0) }); "
                  + "direct MiB/s \(direct.map { String(format: "%.1f", $0) }); origin/direct \(String(format: "%.2f", ratio)); "
                  + "ingest RSS growth kB \(growth)")
            #expect(growth.allSatisfy { $0 < 8 * 1024 }, "RSS growth \(growth) kB")
        } }
    }
}

/// Samples a process's RSS every 10 ms on a thread of its own until stopped; returns the highest (kB).
final class PeakSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var highest = 0
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(pid: Int32) {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                let rss = OriginUploadBenchTests.rss(pid)
                lock.withLock { highest = max(highest, rss) }
                usleep(10_000)
            }
            done.signal()
        }
    }

    func stop() -> Int {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { highest }
    }
}
