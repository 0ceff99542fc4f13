import Foundation
import Kafka
import ServiceLogging

/// `backbone dump [TOPIC…] [--trace ID]`: every record of the topics (default: every
/// non-internal topic) as JSON lines, from the beginning up to the high watermarks captured at
/// start; `--trace` keeps those of one trace.
enum DumpCommand {
    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["trace"])
        try args.only(["trace"])
        let traceID = try TailCommand.traceID(args.value("trace"))
        let settings = try KafkaSettings.resolve(logger: logger)
        let topics = args.positional.isEmpty
            ? try await settings.listTopics(try settings.admin()).map(\.name).filter { !KafkaSettings.isInternal($0) }
            : args.positional
        guard !topics.isEmpty else {
            FileHandle.standardError.write(Data("backbone: dumped 0 records (the cluster has no topics)\n".utf8))
            return 0
        }
        let plan = try await TopicReadPlan.make(topics: topics, partition: nil, from: .beginning, settings: settings)
        let reader = TopicReader(settings: settings)
        let count = try await Interruptible.run {
            try await reader.read(topics: topics, plan: plan, follow: false, filter: .init(traceID: traceID), writer: LineWriter())
        }
        FileHandle.standardError.write(Data("backbone: dumped \(count) records from \(topics.count) topic(s)\n".utf8))
        return 0
    }
}
