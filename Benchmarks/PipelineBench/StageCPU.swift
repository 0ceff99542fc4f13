import Foundation
import Postgres

/// What each stage of the pipeline costs in CPU, its PostgreSQL work included: a service's
/// process plus the PostgreSQL backends it opened, found by `application_name` (every service
/// connects under its own name). What no stage opened — the WAL writer, the checkpointer,
/// autovacuum, this bench's and the probe's reads — stays with "postgres (shared)".
struct StageCPU: Sendable {
    /// CPU seconds so far: of each named process (PostgreSQL: the postmaster and all its
    /// children), and of each client backend with its application name.
    struct Reading: Sendable {
        var processes: [String: Double]
        var backends: [Int32: (application: String, seconds: Double)]
    }

    let database: PostgresClient
    let pids: [(name: String, pid: Int32)]

    func read() async -> Reading {
        var backends: [Int32: (application: String, seconds: Double)] = [:]
        if let rows = try? await database.query("SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = 'client backend'") {
            for row in rows {
                guard let pid = try? row.decode(Int.self, 0), let application = try? row.decode(String.self, 1),
                      let seconds = cpuSeconds(Int32(pid)) else { continue }
                backends[Int32(pid)] = (application, seconds)
            }
        }
        var processes: [String: Double] = [:]
        for (name, pid) in pids { processes[name] = cpuSeconds(pid, children: name == Self.postgres) ?? 0 }
        return Reading(processes: processes, backends: backends)
    }

    /// CPU seconds each stage used between two readings, in `pids` order, its backends
    /// included; PostgreSQL keeps only what no stage's backend used.
    func used(from before: Reading, to after: Reading) -> [(name: String, seconds: Double)] {
        var attributed: [String: Double] = [:]
        let names = Set(pids.map(\.name))
        for (pid, backend) in after.backends where names.contains(backend.application) && backend.application != Self.postgres {
            // A backend opened during the step counts from zero.
            attributed[backend.application, default: 0] += backend.seconds - (before.backends[pid]?.seconds ?? 0)
        }
        let total = attributed.values.reduce(0, +)
        return pids.map { entry in
            let own = (after.processes[entry.name] ?? 0) - (before.processes[entry.name] ?? 0)
            if entry.name == Self.postgres { return ("postgres (shared)", max(0, own - total)) }
            return (entry.name, own + (attributed[entry.name] ?? 0))
        }
    }

    static let postgres = "postgres"
}

/// CPU seconds (user + system) of a process so far, from /proc; with `children`, plus those
/// of its live child processes (PostgreSQL's backends under the postmaster).
func cpuSeconds(_ pid: Int32, children: Bool = false) -> Double? {
    func stat(_ pid: Int32) -> (ppid: Int32, seconds: Double)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // Fields after the name: state [0], ppid [1], utime [11], stime [12] (man 5 proc: 4, 14, 15).
        guard fields.count > 12, let ppid = Int32(fields[1]), let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (ppid, (user + system) / Double(sysconf(Int32(_SC_CLK_TCK))))
    }
    guard var total = stat(pid)?.seconds else { return nil }
    if children, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") {
        for entry in entries {
            guard let child = Int32(entry), let s = stat(child), s.ppid == pid else { continue }
            total += s.seconds
        }
    }
    return total
}
