import Contracts
import Foundation
import JSON
import Testing

/// The wire encodings are pinned by files in `Fixtures/`: a change that alters what the
/// apps or other services read fails here first.
@Suite("Golden JSON fixtures")
struct GoldenFixtureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: fixtures.appendingPathComponent(name)))
    }

    /// Re-encodes with sorted keys so fixtures compare independent of whitespace.
    static func canonical(_ bytes: [UInt8]) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(bytes))
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    static func assertRoundTrip<T: Codable & Equatable>(_ type: T.Type, _ name: String) throws -> T {
        let original = try bytes(name)
        let value = try ContractCoding.decode(T.self, from: original)
        let encoded = try ContractCoding.encode(value)
        #expect(try canonical(encoded) == canonical(original), "\(name) must re-encode byte-for-byte (modulo whitespace)")
        #expect(try ContractCoding.decode(T.self, from: encoded) == value)
        return value
    }

    @Test("an upload batch written as the iOS ReadingEventUploadItem decodes, with ISO-8601 and epoch-ms timestamps")
    func iosUploadBatch() throws {
        let batch = try ContractCoding.decode(ReadingEventBatchRequest.self, from: Self.bytes("reading-event-batch.ios.json"))
        #expect(batch.events.count == 3)
        let iso = batch.events[0]
        #expect(iso.eventType == .opened && iso.readingTargetType == .knowledgeSource && iso.position == nil)
        #expect(iso.clientTimestamp == ContractCoding.parseTimestamp("2026-11-30T08:15:30.123Z"))
        let epoch = batch.events[1]
        #expect(epoch.clientTimestamp.timeIntervalSince1970 == 1_796_026_545.123)
        #expect(epoch.position == .page(3, of: 12, anchor: "epubcfi(/6/4!/4/2/1:0)"))
        #expect(epoch.position?.percent == 25)
        let offset = batch.events[2]
        #expect(offset.clientTimestamp == ContractCoding.parseTimestamp("2026-11-30T08:15:49Z"))
        #expect(offset.readingTargetType == .temporaryFile && offset.knowledgeBaseId == nil)
        #expect(offset.position == .fraction(0.42))
    }

    @Test("a reading.events.v2 record value is pinned")
    func readingEventRecord() throws {
        let record = try Self.assertRoundTrip(ReadingEventRecord.self, "reading-event-record.json")
        #expect(record.schemaVersion == 1 && record.userId == "user-1")
    }

    @Test("a batch response is pinned: one result per event with status and code")
    func batchResponse() throws {
        let response = try ContractCoding.decode(ReadingEventBatchResponse.self, from: Self.bytes("reading-event-batch-response.json"))
        #expect(response.results.map(\.status) == [.accepted, .duplicate, .rejected])
        let rebuilt = ReadingEventBatchResponse(results: response.results)
        #expect(try Self.canonical(ContractCoding.encode(rebuilt)) == Self.canonical(Self.bytes("reading-event-batch-response.json")))
    }

    @Test("a room.transcode.status.v1 ready record is pinned")
    func transcodeStatus() throws {
        let status = try Self.assertRoundTrip(RoomTranscodeStatus.self, "room-transcode-status-ready.json")
        #expect(status.status == .ready && status.code == nil)
    }

    @Test("a room.uploads.v1 uploading record is pinned")
    func roomUpload() throws {
        let event = try Self.assertRoundTrip(RoomUploadEvent.self, "room-upload-uploading.json")
        #expect(event.status == .uploading && event.tags == ["kitchen", "nook"] && event.expiresAt != nil)
    }

    @Test("a realtime.broadcasts.v1 record is pinned, payload carried verbatim")
    func realtimeBroadcast() throws {
        let broadcast = try Self.assertRoundTrip(RealtimeBroadcast.self, "realtime-broadcast.json")
        #expect(broadcast.payload["text"]?.stringValue == "好看！")
    }

    @Test("the account-deletion records and the receipt are pinned")
    func accountDeletion() throws {
        let record = try Self.assertRoundTrip(UserDeletionRecord.self, "user-deletion-record.json")
        #expect(record.schemaVersion == 1 && record.userId == "user-1" && record.purgeAt > record.requestedAt)
        let status = try Self.assertRoundTrip(UserDeletionStatus.self, "user-deletion-status.json")
        #expect(status.status == .erased && status.requestId == record.requestId)
        let receipt = try Self.assertRoundTrip(AccountDeletionResponse.self, "account-deletion-receipt.json")
        #expect(receipt.status == .completed && receipt.services?.map(\.state) == [.erased, .pending])
        #expect(receipt.userIdHash?.count == 64)
    }

    @Test("positions outside their range are invalid; the three forms, mixed forms and other keys are valid")
    func positionValidation() throws {
        #expect(ReadingPosition.page(3, of: 12).isValid)
        #expect(ReadingPosition.fraction(0.42).isValid)
        #expect(ReadingPosition.scroll(1200, of: 5000).isValid)
        #expect(!ReadingPosition.page(0, of: 12).isValid)
        #expect(!ReadingPosition.page(13, of: 12).isValid)
        #expect(!ReadingPosition.fraction(1.01).isValid)
        #expect(!ReadingPosition.scroll(6000, of: 5000).isValid)
        #expect(ReadingPosition(page: 1, totalPages: 2, progress: 0.5).isValid)
        #expect(ReadingPosition(anchor: "only an anchor").isValid)
        #expect(ReadingPosition(anchor: "only an anchor").percent == nil)
        #expect(ReadingPosition.scroll(1250, of: 5000).percent == 25)
        #expect(!ReadingPosition(extra: ["notes": .string(String(repeating: "x", count: 5000))]).isValid)

        // Other keys: the hand-written encoding is byte for byte the encoder's, and reads back equal.
        let position = ReadingPosition(page: 3, totalPages: 10, anchor: "a", extra: [
            "chapterId": .string("c2"), "Zoom": .number(1.5), "章节": .string("第三章"), "_x": .null, "b": .bool(true),
            "loc": .object(["path": .array([.number(1), .number(2.25), .object(["Z": .string("é\n\"q\"")])]), "A": .number(-7)]),
        ])
        var writer = JSONWriter()
        position.write(to: &writer)
        let encoded = try ContractCoding.encode(position)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == String(decoding: encoded, as: UTF8.self))
        #expect(try ContractCoding.decode(ReadingPosition.self, from: encoded) == position)
        #expect(try ReadingPosition(json: writer.bytes) == position)
    }
}

@Suite("Timestamps")
struct TimestampTests {
    @Test("epoch milliseconds survive a round trip exactly")
    func millisecondsRoundTrip() throws {
        for millis: Int64 in [1_796_026_545_123, 0, 999, 1_000, -1, -1_001, 1_796_026_545_999] {
            let date = Date(timeIntervalSince1970: Double(millis) / 1000)
            let text = ContractCoding.formatTimestamp(date)
            let back = try #require(ContractCoding.parseTimestamp(text))
            #expect(Int64((back.timeIntervalSince1970 * 1000).rounded()) == millis, "\(text)")
        }
        #expect(ContractCoding.formatTimestamp(Date(timeIntervalSince1970: 1_796_026_545.123)) == "2026-11-30T08:15:45.123Z")
    }
}
