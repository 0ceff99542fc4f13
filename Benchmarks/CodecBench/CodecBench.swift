import Contracts
import Foundation

/// `codec-bench [EVENTS]`: the reading-event hot path (yajl reader, `JSONWriter`) next to
/// Foundation's `JSONDecoder`/`JSONEncoder` on the same records, in the same run;
/// `codec-bench progress-changed [RECORDS]`: the notifier's `reading.progress.v1` path. Figures are
/// per thread CPU time (`CLOCK_THREAD_CPUTIME_ID`), so other load on the machine does not
/// inflate them; each case is timed 3 times and the best is reported.
@main
struct CodecBench {
    static func cpuSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Best of three: events per CPU second.
    static func rate(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = cpuSeconds()
            try body()
            best = min(best, cpuSeconds() - start)
        }
        return Double(count) / best
    }

    static func main() throws {
        if CommandLine.arguments.dropFirst().first == "progress-changed" {
            return try progressChanged(count: CommandLine.arguments.dropFirst(2).first.flatMap(Int.init) ?? 20_000)
        }
        let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 100_000
        let now = Date()
        let records = (0..<count).map { i in
            ReadingEventRecord(userId: "user-\(i % 500)", receivedAt: now, item: ReadingEventUploadItem(
                eventId: UUID().uuidString, clientSessionId: "session-\(i / 20)", readingTargetType: .knowledgeSource,
                materialId: "material-\(i % 10)", knowledgeBaseId: "kb-1", eventType: i % 20 == 0 ? .opened : .heartbeat,
                position: .page(1 + i % 12, of: 12, anchor: "epubcfi(/6/4!/4/2/1:0)"), activeSecondsDelta: 15,
                clientTimestamp: now.addingTimeInterval(Double(-i)), clientTimezoneOffsetMinutes: 480, sequence: i,
                platform: "iOS", appVersion: "1.4.0"))
        }
        let values = try records.map { try ContractCoding.encode($0) }
        let bodies = try stride(from: 0, to: count, by: 100).map { start in
            try ContractCoding.encode(ReadingEventBatchRequest(events: records[start..<min(count, start + 100)].map { r in
                ReadingEventUploadItem(eventId: r.eventId, clientSessionId: r.clientSessionId, readingTargetType: r.readingTargetType,
                                       materialId: r.materialId, knowledgeBaseId: r.knowledgeBaseId, eventType: r.eventType,
                                       position: r.position, activeSecondsDelta: r.activeSecondsDelta, clientTimestamp: r.clientTimestamp,
                                       clientTimezoneOffsetMinutes: r.clientTimezoneOffsetMinutes, sequence: r.sequence,
                                       platform: r.platform, appVersion: r.appVersion)
            }))
        }
        var sink = 0
        let rows: [(String, Double, Double)] = [
            ("record value → ReadingEventRecord",
             try rate(count) { for v in values { sink &+= try ContractCoding.decode(ReadingEventRecord.self, from: v).sequence } },
             try rate(count) { for v in values { sink &+= try ReadingEventRecord(json: v).sequence } }),
            ("ReadingEventRecord → record value",
             try rate(count) { for r in records { sink &+= try ContractCoding.encode(r).count } },
             rate(count) { for r in records { sink &+= r.json.count } }),
            ("upload body (100 events) → events",
             try rate(count) { for b in bodies { sink &+= try ContractCoding.decode(ReadingEventBatchRequest.self, from: b).events.count } },
             try rate(count) { for b in bodies { sink &+= try RawReadingEvent.parseBatch(b).count } }),
        ]
        print("codec-bench: \(count) reading events, \(values.reduce(0) { $0 + $1.count } / count) bytes per record, events per CPU second (best of 3)")
        print("case".padding(toLength: 36, withPad: " ", startingAt: 0) + "   Foundation    fast path   ratio")
        for (name, foundation, fast) in rows {
            print(name.padding(toLength: 36, withPad: " ", startingAt: 0)
                  + String(format: "  %11.0f  %11.0f  %5.1f×", foundation, fast, fast / foundation))
        }
        if sink == 42 { print("") }
    }
}
