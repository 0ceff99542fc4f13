// Writes reading-event-upload.date-<strategy>.json: one ReadingEventUploadItem-shaped event
// encoded by Foundation's JSONEncoder under each date strategy an iOS client may choose.
// Run from this directory: swift generate-date-strategy-fixtures.swift
import Foundation

struct UploadItem: Encodable {
    var eventId = "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
    var clientSessionId = "7A0E1C3D-2B4F-4E8A-9C61-1F2E3D4C5B6A"
    var readingTargetType = "knowledgeSource"
    var materialId = "lesson-42"
    var eventType = "heartbeat"
    var activeSecondsDelta = 15
    var clientTimestamp: Date
    var clientTimezoneOffsetMinutes = 480
    var sequence = 2
    var platform = "iOS"
    var appVersion = "2.3.0"
}

struct Batch: Encodable { var events: [UploadItem] }

// 2026-11-30T08:15:45.125Z: exactly representable in binary, so every form names the same millisecond.
let instant = Date(timeIntervalSince1970: 1_796_026_545.125)
let strategies: [(String, JSONEncoder.DateEncodingStrategy)] = [
    ("deferredToDate", .deferredToDate),
    ("secondsSince1970", .secondsSince1970),
    ("millisecondsSince1970", .millisecondsSince1970),
    ("iso8601", .iso8601),
]
for (name, strategy) in strategies {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.dateEncodingStrategy = strategy
    let data = try encoder.encode(Batch(events: [UploadItem(clientTimestamp: instant)]))
    try (data + Data("\n".utf8)).write(to: URL(fileURLWithPath: "reading-event-upload.date-\(name).json"))
}
