import Contracts
import Foundation
import JSON
import RealtimeNotifier

/// `codec-bench progress-changed [RECORDS]`: what the realtime notifier's sequencer spends on one
/// `reading.progress.v1` record — `ChannelSequencer.input(progress:)` (the record to its
/// `progress_updated` draft) and the draft's payload text as `apply` writes it
/// (`PhoenixMessage.json`) — next to the four Foundation passes it took before 2026-12-06
/// (decode, encode, decode into `JSONValue`, encode the payload). The records are what the
/// progress projector publishes (`ContractCoding.encode`), with every status and position kind,
/// missing optionals and fractional percents.
///
/// Then the sequenced event of each draft written and read as the notifier's own topic carries it
/// (`SequencedEventJSON`), next to `ContractCoding` on the same events.
///
/// Under `valgrind --tool=callgrind --toggle-collect='*sequencerPass*'` the collected
/// instructions divided by 3 × RECORDS are the sequencer's instructions per record
/// (`*sequencedPass*`, `*foundationPass*`, `*foundationSequencedPass*` the other loops').
extension CodecBench {
    static func progressRecords(_ count: Int) throws -> [[UInt8]] {
        let now = Date(timeIntervalSince1970: 1_796_000_000.123)
        let statuses = ReadingStatus.allCases
        return try (0..<count).map { i in
            let position: ReadingPosition? = switch i % 5 {
            case 0: .page(1 + i % 300, of: 300, anchor: "epubcfi(/6/4!/4/2/1:\(i % 97))")
            case 1: .fraction(Double(i % 1000) / 1000)
            case 2: .scroll(Double(i % 5000), of: 5000, anchor: "p-\(i % 40)")
            case 3: ReadingPosition(page: 1 + i % 12, totalPages: 12, extra: ["chapterId": .string("ch-\(i % 12)"), "zoom": .number(1.25)])
            default: nil
            }
            let change = ReadingProgressChanged(
                userId: "user-\(i % 500)", materialId: "material-\(i % 40)", status: statuses[i % statuses.count],
                lastPosition: position, progressPercent: position?.percent ?? Double(i % 10_000) / 100,
                totalActiveSeconds: 15 * (i % 4000), lastReadAt: i % 7 == 6 ? nil : now.addingTimeInterval(Double(-i) * 1.5),
                lastSessionId: i % 3 == 2 ? nil : "session-\(i / 20)")
            return try ContractCoding.encode(change)
        }
    }

    /// The sequencer's path: each record to its draft, each draft's payload to its text.
    @inline(never)
    static func sequencerPass(_ values: [[UInt8]]) throws -> Int {
        var sink = 0
        for value in values {
            for draft in try ChannelSequencer.input(progress: value).drafts {
                sink &+= PhoenixMessage.json(draft.payload).utf8.count
            }
        }
        return sink
    }

    /// The same with Foundation's four passes, as the sequencer took them before 2026-12-06.
    @inline(never)
    static func foundationPass(_ values: [[UInt8]]) throws -> Int {
        var sink = 0
        for value in values {
            let change = try ContractCoding.decode(ReadingProgressChanged.self, from: value)
            let payload = try ContractCoding.decoder.decode(JSONValue.self, from: ContractCoding.encoder.encode(change))
            sink &+= try ContractCoding.encoder.encode(payload).count
        }
        return sink
    }

    /// The sequenced event of each draft through the notifier's own topic: written as
    /// `SequencedPublisher` writes it, read as `LiveEventConsumer` reads it.
    @inline(never)
    static func sequencedPass(_ events: [SequencedChannelEvent]) throws -> Int {
        var sink = 0
        for event in events { sink &+= Int(try SequencedEventJSON.event(try SequencedEventJSON.value(event)).seq) }
        return sink
    }

    /// The same with `ContractCoding` (`JSONEncoder`, `JSONDecoder`), as before 2026-12-06.
    @inline(never)
    static func foundationSequencedPass(_ events: [SequencedChannelEvent]) throws -> Int {
        var sink = 0
        for event in events {
            sink &+= Int(try ContractCoding.decode(SequencedChannelEvent.self, from: try ContractCoding.encode(event)).seq)
        }
        return sink
    }

    static func progressChanged(count: Int) throws {
        let values = try progressRecords(count)
        var sink = 0
        // The same text both ways, or the comparison means nothing.
        for value in values.prefix(200) {
            let fast = try ChannelSequencer.input(progress: value).drafts.map { PhoenixMessage.json($0.payload) }
            let change = try ContractCoding.decode(ReadingProgressChanged.self, from: value)
            let payload = try ContractCoding.decoder.decode(JSONValue.self, from: ContractCoding.encoder.encode(change))
            guard fast == [String(decoding: try ContractCoding.encoder.encode(payload), as: UTF8.self)] else {
                print("codec-bench: the sequencer's payload differs from Foundation's for \(String(decoding: value, as: UTF8.self))")
                exit(1)
            }
        }
        let createdAt = Date(timeIntervalSince1970: 1_796_000_100.5)
        let events = try values.enumerated().flatMap { i, value in
            try ChannelSequencer.input(progress: value).drafts.map {
                SequencedChannelEvent(channel: $0.channel.name, seq: Int64(i + 1), event: $0.event, payload: $0.payload, createdAt: createdAt)
            }
        }
        for event in events.prefix(200) {
            guard try SequencedEventJSON.value(event) == ContractCoding.encode(event),
                  try SequencedEventJSON.event(try ContractCoding.encode(event)) == event else {
                print("codec-bench: the sequenced event's text differs from Foundation's for \(event)")
                exit(1)
            }
        }
        let foundation = try rate(count) { sink &+= try foundationPass(values) }
        let sequencer = try rate(count) { sink &+= try sequencerPass(values) }
        let foundationSequenced = try rate(count) { sink &+= try foundationSequencedPass(events) }
        let sequenced = try rate(count) { sink &+= try sequencedPass(events) }
        print("codec-bench progress-changed: \(count) records, \(values.reduce(0) { $0 + $1.count } / count) bytes per record, records per CPU second (best of 3)")
        print("case".padding(toLength: 36, withPad: " ", startingAt: 0) + "   Foundation    notifier   ratio")
        print("record → draft → payload text".padding(toLength: 36, withPad: " ", startingAt: 0)
              + String(format: "  %11.0f  %11.0f  %5.1f×", foundation, sequencer, sequencer / foundation))
        print("sequenced event written and read".padding(toLength: 36, withPad: " ", startingAt: 0)
              + String(format: "  %11.0f  %11.0f  %5.1f×", foundationSequenced, sequenced, sequenced / foundationSequenced))
        print(String(format: "µs of CPU per record: Foundation %.2f + %.2f, notifier %.2f + %.2f", 1e6 / foundation,
                     1e6 / foundationSequenced, 1e6 / sequencer, 1e6 / sequenced))
        if sink == 42 { print("") }
    }
}
