import Contracts
import Foundation
import Kafka
import Lifecycle
import Postgres
import Projection
import UserErasure

/// The room catalog's read model: `room.uploads.v1` (a version from upload-init on, and its
/// abandonment), `room.transcode.requests.v1` (what the owner asked for at upload-complete:
/// title, tags, visibility) and `room.transcode.status.v1` (where each version got to) →
/// `catalog_versions` and `catalog_rooms`, on the projection runner (offsets in PostgreSQL
/// with the rows, undecodable records to the DLQ). Its own consumer group, separate from the
/// worker's intake: the catalog can be rebuilt from the topics without touching jobs.
///
/// Order: a version's statuses arrive in order (keyed by room, one partition), and so do its
/// upload events; its request is on another topic again and may be applied before or after
/// either, so upload, request and status fields are merged independently: a request outranks
/// the upload-init's title, tags and visibility, a worker status outranks both as the
/// version's status, and `abandoned` (a version that never got a request) sticks. The request's
/// city label and redactions go with its title (the redactions only a request carries).
public struct CatalogProjection: Projection {
    public enum Event: Sendable, Equatable {
        case request(RoomTranscodeRequest)
        case status(RoomTranscodeStatus)
        case upload(RoomUploadEvent)
    }
    public typealias Effects = Void

    let requestsTopic: String
    let uploadsTopic: String
    let tables: CatalogTables
    /// How much older a C-grade room ranks in the feed (its weight × 0.5 on a recency score
    /// that halves every `feedHalfLife`).
    let feedHalfLife: Duration
    /// Called after every committed batch (the answer cache drops what it holds).
    let onCommit: @Sendable () -> Void

    public init(requestsTopic: String, uploadsTopic: String = Topics.roomUploads, tables: CatalogTables = .live,
                feedHalfLife: Duration, onCommit: @escaping @Sendable () -> Void = {}) {
        self.requestsTopic = requestsTopic
        self.uploadsTopic = uploadsTopic
        self.tables = tables
        self.feedHalfLife = feedHalfLife
        self.onCommit = onCommit
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> Event {
        if record.topic == requestsTopic {
            return .request(try Self.catalogued(try ContractCoding.decode(RoomTranscodeRequest.self, from: record.value)))
        }
        if record.topic == uploadsTopic {
            var upload = try ContractCoding.decode(RoomUploadEvent.self, from: record.value)
            upload.locationCity = Self.locationLabel(upload.locationCity)
            for (name, value) in [("roomId", upload.roomId), ("versionId", upload.versionId), ("ownerUserId", upload.ownerUserId)] {
                guard TranscodeIntake.isIdentifier(value) else {
                    throw InvalidRecord(description: "\(name) must be 1–128 printable characters")
                }
            }
            guard upload.title.utf8.count <= 1_000, upload.tags.count <= 100 else {
                throw InvalidRecord(description: "title over 1000 bytes or more than 100 tags")
            }
            return .upload(upload)
        }
        let status = try ContractCoding.decode(RoomTranscodeStatus.self, from: record.value)
        for (name, value) in [("roomId", status.roomId), ("versionId", status.versionId), ("ownerUserId", status.ownerUserId)] {
            guard TranscodeIntake.isIdentifier(value) else {
                throw InvalidRecord(description: "\(name) must be 1–128 printable characters")
            }
        }
        return .status(status)
    }

    public func apply(_ events: [ProjectedEvent<Event>], in connection: PostgresConnection) async throws {
        // Rooms of an erased account stay out of the catalog (a replay, a rebuild).
        func owner(_ event: Event) -> String {
            switch event { case .request(let r): r.ownerUserId; case .status(let s): s.ownerUserId; case .upload(let u): u.ownerUserId }
        }
        let erased = try await ErasedUsers(service: TranscodeErasure.service)
            .erased(among: Set(events.lazy.map { owner($0.event) }), in: connection)
        let deltas = CatalogVersionDelta.fold(events.map(\.event).filter { !erased.contains(owner($0)) })
        guard !deltas.isEmpty else { return }
        _ = try await connection.execute(CatalogSQL.upsertVersions(tables), try CatalogVersionDelta.binds(deltas))
        let rooms = Array(Set(deltas.map(\.roomId))).sorted()
        _ = try await connection.execute(CatalogSQL.refreshRooms(tables), [rooms, feedHalfLife.wholeMicroseconds])
    }

    public func afterCommit(_ effects: Void) async throws { onCommit() }

    /// A request as the catalog keeps it (its city label reduced to a label), or an error for
    /// one it refuses.
    static func catalogued(_ request: RoomTranscodeRequest) throws -> RoomTranscodeRequest {
        var request = request
        try TranscodeIntake.validate(request)
        guard request.title.utf8.count <= 1_000, request.tags.count <= 100 else {
            throw InvalidRecord(description: "title over 1000 bytes or more than 100 tags")
        }
        guard request.redactions.count <= 1_000, request.redactions.allSatisfy({ $0.region.isValid }) else {
            throw InvalidRecord(description: "more than 1000 redactions, or a region outside 0…1")
        }
        request.locationCity = Self.locationLabel(request.locationCity)
        return request
    }

    /// Brings a version to the end of its job (`status`: ready or failed) in the job's own
    /// transaction, with the request the job ran (its title, tags, visibility and redactions), so
    /// that the catalog says it before the status goes out: the app reads the room on the
    /// pushed `ready`. The same records come again from the topics, and change nothing then.
    public func applyJobEnd(request: RoomTranscodeRequest, status: RoomTranscodeStatus,
                            in connection: PostgresConnection) async throws {
        let events: [Event] = ((try? Self.catalogued(request)).map { [.request($0)] } ?? []) + [.status(status)]
        try await apply(events.map { ProjectedEvent(event: $0, topic: "", partition: -1, offset: -1) }, in: connection)
    }

    /// The longest city label kept, in characters.
    static let maxLocationCharacters = 100

    /// A room's city-level label as the catalog keeps it (seed `002_*` §8.1, P-3), or nil:
    /// surrounding whitespace trimmed; empty, longer than `maxLocationCharacters` (or 4 bytes
    /// each: characters piled with combining marks), holding a
    /// control character, or holding a decimal number or a degree sign (coordinates, which the
    /// label must never be) → no label. Ingest validates the label too; a label is decoration, so
    /// the catalog drops a bad one rather than the record that carries it (whose title,
    /// visibility and status still count).
    static func locationLabel(_ raw: String?) -> String? {
        guard let label = raw?.trimmingCharacters(in: .whitespacesAndNewlines), !label.isEmpty,
              label.count <= maxLocationCharacters, label.utf8.count <= 4 * maxLocationCharacters,
              !Contracts.Identifier.containsControlCharacter(label), !label.contains("°") else {
            return nil
        }
        let scalars = Array(label.unicodeScalars)
        for i in scalars.indices.dropFirst().dropLast()
        where (scalars[i] == "." || scalars[i] == ",") && scalars[i - 1].properties.numericType != nil
            && scalars[i + 1].properties.numericType != nil {
            return nil
        }
        return label
    }
}

/// Everything one batch says about one version, folded in offset order.
struct CatalogVersionDelta: Sendable, Equatable {
    var versionId: String
    var roomId: String
    var ownerId: String
    /// The newest request seen for the version (a re-sent upload-complete repeats it).
    var request: RoomTranscodeRequest?
    var visibility: RoomVisibility?
    /// The newest status by its `at` (the later record on a tie): statuses are complete
    /// snapshots, so the newest one is the state — a status delivered again after newer ones (the
    /// worker's outbox publishes at least once; an operator replays a topic) changes nothing.
    var status: RoomTranscodeStatus?
    /// The last `uploading` announcement (its title, tags and visibility stand in for the
    /// request's until one is seen), and whether the version was abandoned.
    var uploading: RoomUploadEvent?
    var abandoned = false
    /// The instants of the `queued` statuses seen (the first attempt and each retry publish
    /// one): the attempts, counted once however often each is delivered.
    var queuedAts: Set<Date> = []
    var firstAt: Date
    var lastAt: Date

    static func fold(_ events: [CatalogProjection.Event]) -> [CatalogVersionDelta] {
        var order: [String] = []
        var deltas: [String: CatalogVersionDelta] = [:]
        for event in events {
            let (versionId, roomId, ownerId, at): (String, String, String, Date) = switch event {
            case .request(let r): (r.versionId, r.roomId, r.ownerUserId, r.requestedAt)
            case .status(let s): (s.versionId, s.roomId, s.ownerUserId, s.at)
            case .upload(let u): (u.versionId, u.roomId, u.ownerUserId, u.at)
            }
            if deltas[versionId] == nil {
                order.append(versionId)
                deltas[versionId] = CatalogVersionDelta(versionId: versionId, roomId: roomId, ownerId: ownerId, firstAt: at, lastAt: at)
            }
            var delta = deltas[versionId]!
            delta.firstAt = min(delta.firstAt, at)
            delta.lastAt = max(delta.lastAt, at)
            switch event {
            case .request(let request):
                if delta.request.map({ request.requestedAt >= $0.requestedAt }) ?? true { delta.request = request }
                delta.visibility = delta.request?.visibility
            case .status(let status):
                if delta.status.map({ status.at >= $0.at }) ?? true { delta.status = status }
                if status.status == .queued { delta.queuedAts.insert(status.at) }
                if delta.request == nil, let visibility = status.visibility { delta.visibility = visibility }
            case .upload(let upload):
                switch upload.status {
                case .uploading:
                    delta.uploading = upload
                    if delta.request == nil, delta.visibility == nil { delta.visibility = upload.visibility }
                case .abandoned:
                    delta.abandoned = true
                }
            }
            deltas[versionId] = delta
        }
        return order.map { deltas[$0]! }
    }

    /// The binds of `CatalogSQL.upsertVersions`, one array per column ("" = none).
    static func binds(_ deltas: [CatalogVersionDelta]) throws -> [any PostgresBindable] {
        func json(_ strings: [String]) -> String {
            String(decoding: (try? JSONSerialization.data(withJSONObject: strings)) ?? Data("[]".utf8), as: UTF8.self)
        }
        func stamp(_ date: Date?) -> String { date.map { ContractCoding.formatTimestamp($0) } ?? "" }
        let finished: (CatalogVersionDelta) -> Date? = { d in
            guard let s = d.status, s.status == .ready || s.status == .failed else { return nil }
            return s.at
        }
        return [
            deltas.map(\.versionId), deltas.map(\.roomId), deltas.map(\.ownerId),
            deltas.map { $0.request?.title ?? $0.uploading?.title ?? "" },
            deltas.map { ($0.request?.tags ?? $0.uploading?.tags).map(json) ?? "" },
            deltas.map { $0.visibility?.rawValue ?? "" }, deltas.map { stamp($0.request?.requestedAt) },
            deltas.map { $0.status?.status.rawValue ?? "" }, deltas.map { $0.status?.stage ?? "" },
            deltas.map { $0.status?.code?.rawValue ?? "" }, deltas.map { $0.status?.reason ?? "" },
            deltas.map { $0.status?.qualityGrade ?? "" }, deltas.map { $0.status?.manifestKey ?? "" },
            deltas.map { $0.status?.thumbnailKey ?? "" }, deltas.map { $0.status?.glbKeys.map(json) ?? "" },
            deltas.map { $0.queuedAts.sorted().map { stamp($0) }.joined(separator: ",") }, deltas.map { stamp($0.status?.at) }, deltas.map { stamp(finished($0)) },
            deltas.map { stamp($0.firstAt) }, deltas.map { stamp($0.lastAt) },
            deltas.map { $0.abandoned ? "abandoned" : $0.uploading != nil ? "uploading" : "" },
            // The request's label outranks the upload-init's, as its title does (nil from a request: none given).
            deltas.map { delta in (delta.request != nil ? delta.request?.locationCity : delta.uploading?.locationCity) ?? "" },
            try deltas.map { delta in try delta.request.map { String(decoding: try ContractCoding.encode($0.redactions), as: UTF8.self) } ?? "" },
        ]
    }
}
