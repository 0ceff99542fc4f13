import Foundation
import ServiceLogging

/// `flow-a-bench UPLOADS PACKAGE ROOMPLAN`: against a running system (`backbone dev`; its
/// `.backbone/dev.env` or the environment), UPLOADS uploads of the package one after another,
/// each timed from the 202 of upload-complete to the `ready` broadcast received on the realtime
/// WebSocket (``FlowALatencyBenchmark``). Prints one line per upload (with when each status
/// arrived), the median arrival of each status, and
/// `flow-a uploads=<n> bytes=<n> p50=<s> p99=<s> max=<s> min=<s> failed=<n>`.
/// `Benchmarks/transcode/bench.sh latency` starts the stack and runs it. A separate executable
/// from `transcode-bench`, whose `--idle` process is the memory base of the transcode benchmark.
@main
struct FlowABench {
    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count == 3, let uploads = Int(arguments[0]), uploads > 0 else {
            FileHandle.standardError.write(Data("usage: flow-a-bench UPLOADS PACKAGE ROOMPLAN\n".utf8))
            exit(2)
        }
        _ = try await FlowALatencyBenchmark.run(uploads: uploads, package: arguments[1], roomplan: arguments[2],
                                                logger: Logger(label: "flow-a-bench", level: .warning))
    }
}
