import Foundation
import Kafka
import ServiceLogging

/// `backbone republish FILE|- [--topic T]`: produces every JSON line (the `tail`/`dump`
/// format) to its `topic` (or `T`) with its key and value, waiting for each acknowledgement.
/// The whole input is checked first: a malformed line is reported with its number and
/// nothing is sent. Partitions follow the key (the line's partition and offset are ignored);
/// records get new timestamps.
enum RepublishCommand {
    static let usage = "usage: backbone republish FILE|- [--topic T]"
    static let chunkSize = 1_000

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["topic"])
        try args.only(["topic"])
        guard args.positional.count == 1, let path = args.positional.first else {
            throw CommandLineArguments.UsageError(description: usage)
        }
        if let topic = args.value("topic"), topic.isEmpty { throw CommandLineArguments.UsageError(description: "--topic needs a name") }
        let settings = try KafkaSettings.resolve(logger: logger)
        let input = try read(path)
        let records = try parse(input, redirectTo: args.value("topic"))
        guard !records.isEmpty else {
            print("republished 0 records")
            return 0
        }
        let producer = try await CommandProducer.open(clientID: "backbone-republish", settings: settings, database: nil)
        var sent = 0
        for start in stride(from: 0, to: records.count, by: chunkSize) {
            let chunk = Array(records[start..<min(start + chunkSize, records.count)])
            let results = await producer.send(chunk.map(\.record))
            for (item, result) in zip(chunk, results) {
                if case .failure(let error) = result {
                    await producer.shutdown()
                    throw CommandError(code: .deliveryFailed,
                                       message: "\(error.message) (\(sent) earlier records were acknowledged)",
                                       context: "line \(item.line) → \(item.record.topic)", isRetriable: error.isRetriable)
                }
                sent += 1
            }
        }
        await producer.shutdown()
        let topics = Set(records.map(\.record.topic)).sorted().joined(separator: ", ")
        print("republished \(sent) records to \(topics)")
        return 0
    }

    static func read(_ path: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw CommandError(code: .io, message: "cannot read the file (\(error.localizedDescription))", context: path)
        }
    }

    /// Every non-blank line as a record to produce, or the first malformed line's error.
    static func parse(_ input: Data, redirectTo topic: String?) throws -> [(line: Int, record: KafkaProducerRecord)] {
        let bytes = [UInt8](input)
        var records: [(line: Int, record: KafkaProducerRecord)] = []
        var lineNumber = 0
        var lineStart = 0
        while lineStart < bytes.count {
            lineNumber += 1
            let newline = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.count
            var line = bytes[lineStart..<newline]
            lineStart = newline + 1
            if line.last == 0x0D { line = line.dropLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let parsed = try RecordLine.decode(line, lineNumber: lineNumber)
            records.append((lineNumber, KafkaProducerRecord(topic: topic ?? parsed.topic, key: parsed.key, value: parsed.value)))
        }
        return records
    }
}
