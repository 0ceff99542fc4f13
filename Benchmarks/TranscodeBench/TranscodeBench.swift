import Foundation
import Lifecycle
import RoomScan

/// `transcode-bench PACKAGE ROOMPLAN [RUNS]`: `RoomTranscoder.transcode` — the transcode
/// worker's compute core — on one RoomPlan package, RUNS times (default 5), each into a
/// fresh output directory. Prints one line per run and a summary line
/// `swift <package bytes> median=<s> min=<s> runs=<n> layers=<n> triangles=<n> glbBytes=<n>`, which
/// `Benchmarks/transcode/bench.sh` reads. Times are wall clock around the call only.
///
/// `transcode-bench --once PACKAGE ROOMPLAN`: one transcode and nothing else (peak RSS); also
/// prints the process's `VmHWM`, `RssAnon` and `RssFile` from `/proc/self/status` at the end.
/// `transcode-bench --idle`: returns at once (the process base for peak RSS).
@main
struct TranscodeBench {
    static func main() throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--idle" { return }
        let once = arguments.first == "--once"
        if once { arguments.removeFirst() }
        guard arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: transcode-bench [--once] PACKAGE ROOMPLAN [RUNS] | --idle\n".utf8))
            exit(2)
        }
        let package = URL(fileURLWithPath: arguments[0])
        let roomPlan = URL(fileURLWithPath: arguments[1])
        let runs = once ? 1 : max(1, arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("transcode-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }

        var seconds: [Double] = []
        var layers = 0
        var triangles = 0
        var glbBytes = 0
        for run in 0..<runs {
            let output = scratch.appendingPathComponent("run\(run)")
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let metadata = TranscodeMetadata(roomId: "bench-room", versionId: "v\(run)", durationSeconds: 360)
            let start = ContinuousClock.now
            let result = try RoomTranscoder.transcode(packageAt: package, roomPlanJSON: roomPlan, metadata: metadata, into: output)
            let elapsed = ContinuousClock.now - start
            let s = elapsed.timeInterval
            seconds.append(s)
            layers = result.manifest.layers.count
            triangles = result.manifest.layers.reduce(0) { $0 + $1.summary.triangleCount }
            glbBytes = result.manifest.layers.reduce(0) { $0 + $1.glbBytes }
            if !once { print(String(format: "run %d: %.3f s", run + 1, s)) }
            try? FileManager.default.removeItem(at: output)
        }
        let sorted = seconds.sorted()
        let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        let bytes = (try? FileManager.default.attributesOfItem(atPath: package.path)[.size] as? NSNumber)?.intValue ?? 0
        if once, let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            // Where the resident pages are at the end: anonymous (heap, stacks) or file-backed (code, mapped files).
            let keys = ["VmHWM:", "RssAnon:", "RssFile:"]
            let lines = status.split(separator: "\n").filter { line in keys.contains { line.hasPrefix($0) } }
            print(lines.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }.joined(separator: ", "))
        }
        print(String(format: "swift %d median=%.4f min=%.4f runs=%d layers=%d triangles=%d glbBytes=%d",
                     bytes, median, sorted[0], runs, layers, triangles, glbBytes))
    }
}
