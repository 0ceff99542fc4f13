import Foundation
import JSON
import Kafka
import ServiceLogging

/// `backbone topics [--json]`: every topic with its partition count and, per partition, the
/// low and high watermarks (high − low records are held). `--json`: one JSON line per topic.
enum TopicsCommand {
    struct Row {
        var topic: String
        var partitions: [(id: Int32, low: Int64, high: Int64)]
    }

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: [])
        try args.only(["json"])
        guard args.positional.isEmpty else {
            throw CommandLineArguments.UsageError(description: "usage: backbone topics [--json]")
        }
        let settings = try KafkaSettings.resolve(logger: logger)
        let admin = try settings.admin()
        var rows: [Row] = []
        for topic in try await settings.listTopics(admin) {
            var row = Row(topic: topic.name, partitions: [])
            for id in topic.partitions {
                do {
                    let marks = try await admin.watermarks(topic: topic.name, partition: id)
                    row.partitions.append((id, marks.low, marks.high))
                } catch {
                    throw CommandError(code: .kafkaUnavailable, message: "cannot read watermarks: \(error.message)",
                                       context: "\(topic.name)[\(id)]", isRetriable: error.isRetriable)
                }
            }
            rows.append(row)
        }
        let writer = LineWriter()
        if args.flag("json") {
            for row in rows { writer.write(line: Array(json(row).utf8)) }
        } else {
            writer.write(table(rows))
        }
        writer.flush()
        return 0
    }

    static func json(_ row: Row) -> String {
        let partitions = row.partitions.map { "{\"partition\":\($0.id),\"low\":\($0.low),\"high\":\($0.high)}" }
        return "{\"topic\":\(JSONString.quote(row.topic)),\"partitionCount\":\(row.partitions.count),"
            + "\"partitions\":[\(partitions.joined(separator: ","))]}"
    }

    /// One line per partition; the topic and its partition count on the first.
    static func table(_ rows: [Row]) -> String {
        var cells: [[String]] = [["TOPIC", "PARTITIONS", "PARTITION", "LOW", "HIGH", "RECORDS"]]
        for row in rows {
            if row.partitions.isEmpty { cells.append([row.topic, "0", "-", "-", "-", "-"]) }
            for (index, p) in row.partitions.enumerated() {
                cells.append([index == 0 ? row.topic : "", index == 0 ? String(row.partitions.count) : "",
                              String(p.id), String(p.low), String(p.high), String(max(0, p.high - max(p.low, 0)))])
            }
        }
        let widths = (0..<6).map { column in cells.map { $0[column].count }.max() ?? 0 }
        return cells.map { line in
            line.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }.joined(separator: "\n") + "\n"
    }
}
