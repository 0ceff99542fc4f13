import Foundation
import Kafka
import ServiceLogging

/// `backbone tail TOPIC [--from beginning|end|OFFSET|TIME] [--follow] [--key K]
/// [--partition P] [--limit N] [--trace ID]`: prints records as JSON lines (see `RecordLine`).
/// Without `--follow` it stops at the high watermarks captured at start; with it, Ctrl-C ends
/// it. `--trace` keeps the records of one trace (their `traceparent` header).
enum TailCommand {
    static let usage = "usage: backbone tail TOPIC [--from beginning|end|OFFSET|TIME] [--follow] [--key K] [--partition P] [--limit N] [--trace ID]"

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["from", "key", "partition", "limit", "trace"])
        try args.only(["from", "key", "partition", "limit", "follow", "trace"])
        guard args.positional.count == 1, let topic = args.positional.first else {
            throw CommandLineArguments.UsageError(description: usage)
        }
        let follow = args.flag("follow")
        let fromText = args.value("from") ?? (follow ? "end" : "beginning")
        guard let start = StartPosition(argument: fromText) else {
            throw CommandLineArguments.UsageError(
                description: "--from must be beginning, end, an offset (a whole number ≥ 0) or an ISO-8601 time, not '\(fromText)'")
        }
        let partition = try args.int("partition")
        if let partition, partition < 0 || partition > Int(Int32.max) {
            throw CommandLineArguments.UsageError(description: "--partition must be a partition number ≥ 0")
        }
        let limit = try args.int("limit")
        if let limit, limit < 0 { throw CommandLineArguments.UsageError(description: "--limit must be ≥ 0") }
        let settings = try KafkaSettings.resolve(logger: logger)
        let plan = try await TopicReadPlan.make(topics: [topic], partition: partition.map(Int32.init), from: start, settings: settings)
        if !plan.timeFallback.isEmpty {
            logger.debug("offsets for time unavailable; scanning from the beginning and filtering by timestamp",
                         metadata: ["kafka.partitions": plan.timeFallback.map(\.description).joined(separator: ",")])
        }
        let filter = TopicReader.Filter(key: args.value("key").map { Array($0.utf8) }, limit: limit,
                                        traceID: try traceID(args.value("trace")))
        let reader = TopicReader(settings: settings)
        _ = try await Interruptible.run {
            try await reader.read(topics: [topic], plan: plan, follow: follow, filter: filter, writer: LineWriter())
        }
        return 0
    }

    /// A trace id as `--trace` takes it: 32 hex digits (any case), or a whole `traceparent`.
    static func traceID(_ argument: String?) throws -> String? {
        guard let argument else { return nil }
        if let trace = TraceContext(traceparent: argument.lowercased()) { return trace.traceID }
        let id = argument.lowercased()
        guard id.count == 32, id.allSatisfy(\.isHexDigit) else {
            throw CommandLineArguments.UsageError(description: "--trace must be a trace id (32 hex digits) or a traceparent, not '\(argument)'")
        }
        return id
    }
}
