import Foundation
import Glibc

/// The Swift load client in a process of its own (`BENCH_CLIENT=process`), so that a profile
/// of the bench process is the notifier's (and its embedded broker's) alone.
///
/// `realtime-bench --load-client PORT PATH CONNECTIONS THREADS CHANNELS(comma-separated)`:
/// connection `i` joins `realtime:` + channel `i % count`, as the in-process client does.
/// Speaks `load_client.py`'s protocol: prints `{"ready": n}` once every join was answered,
/// then, once stdin closes, `{"received": n, "errors": n, "histogram": {bucket_0.1ms: count}}`.
enum LoadClientProcess {
    static let flag = "--load-client"

    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 5, let port = UInt16(arguments[0]), let connections = Int(arguments[2]),
              let threads = Int(arguments[3]) else {
            FileHandle.standardError.write(Data("usage: realtime-bench \(flag) PORT PATH CONNECTIONS THREADS CHANNELS\n".utf8))
            return 2
        }
        let channels = arguments[4].split(separator: ",").map(String.init)
        let topics = (0..<connections).map { "realtime:" + channels[$0 % channels.count] }
        let client = LoadClient(port: port, path: arguments[1], topics: topics, threads: threads)
        client.start()
        let deadline = ContinuousClock.now + .seconds(60)
        while client.failure == nil, client.ready < connections, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        guard client.failure == nil, client.ready >= connections else {
            emit(["error": client.failure ?? "joins not answered after 60 s (\(client.ready) of \(connections))"])
            return 1
        }
        emit(["ready": connections])
        _ = FileHandle.standardInput.readDataToEndOfFile()
        let totals = await client.stop()
        var histogram: [String: Int] = [:]
        for (bucket, count) in totals.histogram.enumerated() where count > 0 { histogram[String(bucket)] = count }
        emit(["received": totals.received, "errors": totals.errors, "histogram": histogram])
        return 0
    }

    /// One JSON line on stdout, flushed (the parent reads it while this process runs on).
    private static func emit(_ object: [String: Any]) {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// CPU seconds (user + system) of process `pid` so far, from `/proc/<pid>/stat`.
    static func cpuSeconds(pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return 0 }
        // Fields after the command name: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
