import Auth
import Contracts
import Foundation
import JSON
import Kafka
import Postgres
import Projection
import UserErasure

/// One source record, decoded: the channel events it produces and the room facts it carries.
public struct SequencerInput: Sendable, Hashable {
    public struct Draft: Sendable, Hashable {
        public var channel: ChannelName
        public var event: String
        public var payload: JSONValue
        public var origin: String?
    }

    public struct RoomFacts: Sendable, Hashable {
        public var roomID: String
        public var ownerUserID: String
        public var visibility: RoomVisibility?
    }

    public var drafts: [Draft]
    public var room: RoomFacts?
    /// A comment removed: its `comment_new` is not announced when it is sequenced in the same batch.
    public var withdrawnComment: String? = nil

    /// The users this record is about: the room's owner and the users of `user:` channels.
    var users: [String] {
        var users = room.map { [$0.ownerUserID] } ?? []
        for draft in drafts where draft.channel.name.hasPrefix("user:") { users.append(String(draft.channel.name.dropFirst(5))) }
        return users
    }
}

/// The sequencer: numbers every channel event exactly once.
///
/// On the projection runner (consumer group `realtime-sequencer`), one transaction per batch
/// reserves each channel's next sequences, inserts the history rows, trims the history to its
/// count bound and advances the source offsets (the age bound is applied by the maintenance loop). After the commit the events go to `realtime.sequenced.v1`
/// and their rows are marked published; rows whose publish failed are re-published by
/// ``RealtimeMaintenance`` (the history is the outbox), so no event is lost.
public struct ChannelSequencer: Projection {
    public typealias Event = SequencerInput
    public typealias Effects = [SequencedChannelEvent]

    let configuration: RealtimeConfiguration
    let publisher: SequencedPublisher
    /// Users whose account was erased: records about them are left out (a replay brings
    /// no channel history or room of theirs back).
    let erasedUsers = ErasedUsers(service: RealtimeErasure.service)

    public init(configuration: RealtimeConfiguration, publisher: SequencedPublisher) {
        self.configuration = configuration
        self.publisher = publisher
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> SequencerInput {
        switch record.topic {
        case configuration.transcodeStatusTopic:
            return try Self.input(status: ContractCoding.decode(RoomTranscodeStatus.self, from: record.value))
        case configuration.transcodeRequestsTopic:
            // No channel event: only who owns the room and who may watch it.
            let request = try ContractCoding.decode(RoomTranscodeRequest.self, from: record.value)
            guard ChannelName.room(request.roomId) != nil, ChannelName.user(request.ownerUserId) != nil else {
                throw InvalidRecord(description: "roomId and ownerUserId must be identifiers")
            }
            return SequencerInput(drafts: [], room: .init(roomID: request.roomId, ownerUserID: request.ownerUserId,
                                                          visibility: request.visibility))
        case configuration.roomUploadsTopic:
            // No channel event either: the room and its owner from upload-init on.
            let upload = try ContractCoding.decode(RoomUploadEvent.self, from: record.value)
            guard ChannelName.room(upload.roomId) != nil, ChannelName.user(upload.ownerUserId) != nil else {
                throw InvalidRecord(description: "roomId and ownerUserId must be identifiers")
            }
            guard upload.status == .uploading else { return SequencerInput(drafts: [], room: nil) }
            return SequencerInput(drafts: [], room: .init(roomID: upload.roomId, ownerUserID: upload.ownerUserId,
                                                          visibility: upload.visibility))
        case configuration.progressTopic:
            return try Self.input(progress: record.value)
        case configuration.interactionsTopic:
            return try Self.input(interaction: ContractCoding.decode(RoomInteraction.self, from: record.value))
        case configuration.broadcastsTopic:
            let broadcast = try ContractCoding.decode(RealtimeBroadcast.self, from: record.value)
            guard let channel = ChannelName(broadcast.channel) else {
                throw InvalidRecord(description: "channel must be a non-empty name of at most \(ChannelName.maxUTF8Length) bytes")
            }
            guard Identifier.isAcceptable(broadcast.event) else {
                throw InvalidRecord(description: "event must be a non-empty name of at most \(Identifier.maxUTF8Length) bytes")
            }
            guard case .object = broadcast.payload else { throw InvalidRecord(description: "payload must be a JSON object") }
            return SequencerInput(drafts: [.init(channel: channel, event: broadcast.event, payload: broadcast.payload,
                                                 origin: broadcast.origin)], room: nil)
        default:
            throw InvalidRecord(description: "unexpected topic \(record.topic)")
        }
    }

    /// `room:{roomId}` and `user:{ownerUserId}` get `transcode_progress`, `ready` or `failed`.
    static func input(status: RoomTranscodeStatus) throws -> SequencerInput {
        guard let roomChannel = ChannelName.room(status.roomId), let userChannel = ChannelName.user(status.ownerUserId) else {
            throw InvalidRecord(description:
                "roomId and ownerUserId must be non-empty identifiers of at most \(Identifier.maxUTF8Length) bytes")
        }
        let event = switch status.status {
        case .queued, .transcoding: "transcode_progress"
        case .ready: "ready"
        case .failed: "failed"
        }
        let payload = try statusPayload(status)
        return SequencerInput(
            drafts: [.init(channel: roomChannel, event: event, payload: payload, origin: nil),
                     .init(channel: userChannel, event: event, payload: payload, origin: nil)],
            room: .init(roomID: status.roomId, ownerUserID: status.ownerUserId, visibility: status.visibility))
    }

    /// `user:{roomOwnerId}` gets `comment_new`, `like_new` or `remix_created` for another user's
    /// comment, like or remix, with the ids that open it (`room_id` — for a remix the fork's, with
    /// `version_id` and `remixed_from` — `comment_id`, the notification's `notification_id`),
    /// the actor and an excerpt, as top-level keys of the payload.
    static func input(interaction: RoomInteraction) throws -> SequencerInput {
        if interaction.kind == .commentDeleted {
            return SequencerInput(drafts: [], room: nil, withdrawnComment: interaction.commentId)
        }
        // A remix's fork is a public room of the remixer from its first record on: the notifier
        // learns it here as it learns other rooms from their first request (its `room:{fork}`
        // is joinable; its later versions come through the status topic).
        var fork: SequencerInput.RoomFacts?
        if interaction.kind == .remixCreated, let room = interaction.forkRoomId {
            guard ChannelName.room(room) != nil, ChannelName.user(interaction.actorId) != nil else {
                throw InvalidRecord(description: "forkRoomId and actorId must be identifiers")
            }
            fork = .init(roomID: room, ownerUserID: interaction.actorId, visibility: .public)
        }
        guard let event = interaction.pushEvent, let owner = interaction.roomOwnerId, let room = interaction.roomId else {
            return SequencerInput(drafts: [], room: fork)
        }
        guard let channel = ChannelName.user(owner), ChannelName.room(room) != nil, Identifier.isAcceptable(interaction.actorId) else {
            throw InvalidRecord(description: "roomId, roomOwnerId and actorId must be identifiers")
        }
        var fields: [String: JSONValue] = [
            "kind": .string(["comment_new": "comment", "like_new": "like"][event] ?? "remix"),
            "notification_id": .string(interaction.interactionId), "room_id": .string(room), "actor_id": .string(interaction.actorId),
            "created_at": .string(ContractCoding.formatTimestamp(interaction.at)),
        ]
        if let comment = interaction.commentId { fields["comment_id"] = .string(comment) }
        if let excerpt = RoomInteraction.excerpt(interaction.body ?? interaction.title) { fields["excerpt"] = .string(excerpt) }
        // A remix opens the fork: its room and ready version, and the room it came from.
        if let fork = interaction.forkRoomId, let version = interaction.forkVersionId {
            fields["room_id"] = .string(fork)
            fields["version_id"] = .string(version)
            fields["remixed_from"] = .string(room)
        }
        return SequencerInput(drafts: [.init(channel: channel, event: event, payload: .object(fields), origin: nil)], room: fork)
    }

    /// The status record with the snake_case keys the app's code reads (seed `002_*` §6.2:
    /// `status`, `stage`, `version_id`, `error`) beside its camelCase fields.
    static func statusPayload(_ status: RoomTranscodeStatus) throws -> JSONValue {
        guard case .object(var fields) = try json(status) else { return try json(status) }
        fields["version_id"] = .string(status.versionId)
        fields["room_id"] = .string(status.roomId)
        if let code = status.code { fields["error"] = .string(code.rawValue) }
        if let grade = status.qualityGrade { fields["quality_grade"] = .string(grade) }
        if let manifest = status.manifestKey { fields["manifest_path"] = .string(manifest) }
        if let thumbnail = status.thumbnailKey { fields["thumbnail_path"] = .string(thumbnail) }
        return .object(fields)
    }

    static func json(_ value: some Encodable) throws -> JSONValue {
        try ContractCoding.decoder.decode(JSONValue.self, from: ContractCoding.encoder.encode(value))
    }

    public func apply(_ events: [ProjectedEvent<SequencerInput>], in connection: PostgresConnection) async throws -> [SequencedChannelEvent] {
        let erased = try await erasedUsers.erased(among: Set(events.lazy.flatMap(\.event.users)), in: connection)
        var events = erased.isEmpty ? events : events.filter { $0.event.users.allSatisfy { !erased.contains($0) } }
        let withdrawn = Set(events.compactMap(\.event.withdrawnComment))
        if !withdrawn.isEmpty {
            events = events.map { item in
                var item = item
                item.event.drafts.removeAll { draft in
                    guard draft.event == "comment_new", case .object(let fields) = draft.payload,
                          case .string(let comment)? = fields["comment_id"] else { return false }
                    return withdrawn.contains(comment)
                }
                return item
            }
        }
        try await upsertRooms(events.compactMap(\.event.room), connection)
        let drafts = try await withoutRepeatedStatuses(events.flatMap { item in
            item.event.drafts.map { (draft: $0, source: item, json: PhoenixMessage.json($0.payload)) }
        }, connection)
        guard !drafts.isEmpty else { return [] }

        // Reserve sequences per channel, in first-appearance order (one row lock per channel).
        var counts: [String: Int64] = [:]
        var order: [String] = []
        for (draft, _, _) in drafts {
            if counts[draft.channel.name] == nil { order.append(draft.channel.name) }
            counts[draft.channel.name, default: 0] += 1
        }
        var next: [String: Int64] = [:]
        for row in try await connection.queryPrepared(RealtimeSQL.reserve, [order, order.map { counts[$0]! }]) {
            let channel = try row.decode(String.self, "channel")
            next[channel] = try row.decode(Int64.self, "last_seq") - counts[channel]! + 1
        }

        let now = Date()
        var sequenced: [SequencedChannelEvent] = []
        for (draft, source, _) in drafts {
            guard let seq = next[draft.channel.name] else {
                throw InvalidRecord(description: "no sequence reserved for channel \(draft.channel.name)")
            }
            next[draft.channel.name] = seq + 1
            sequenced.append(SequencedChannelEvent(channel: draft.channel.name, seq: seq, event: draft.event,
                                                   payload: draft.payload, createdAt: now, origin: draft.origin, trace: source.trace))
        }
        let timestamp = ContractCoding.formatTimestamp(now)
        _ = try await connection.executePrepared(RealtimeSQL.insertHistory, [
            sequenced.map(\.channel), sequenced.map(\.seq), sequenced.map(\.event), drafts.map(\.json),
            sequenced.map { _ in timestamp }, drafts.map(\.source.topic), drafts.map { Int64($0.source.partition) },
            drafts.map(\.source.offset),
        ])
        _ = try await connection.executePrepared(RealtimeSQL.trimByCount, [order, Int64(configuration.historyMaxEvents)])
        return sequenced
    }

    /// A draft with the record it came from and its payload as JSON text (encoded once: the
    /// repeat check and the history both take it).
    typealias SequencerDraft = (draft: SequencerInput.Draft, source: ProjectedEvent<SequencerInput>, json: String)

    /// A room status delivered twice (the transcode worker's status outbox publishes at least
    /// once, and a replay of the status topic delivers every status again) is numbered once: a
    /// status draft whose channel's history already holds the same event with the same payload
    /// is left out, as is a repeat within the batch. The payload carries the status's `at`, so a
    /// stage the worker really reports again (a retried job) is a new event.
    func withoutRepeatedStatuses(_ drafts: [SequencerDraft], _ connection: PostgresConnection) async throws -> [SequencerDraft] {
        // A social push carries its interaction's id: a record the topic holds twice is numbered once too.
        let statuses = drafts.indices.filter {
            [configuration.transcodeStatusTopic, configuration.interactionsTopic].contains(drafts[$0].source.topic)
        }
        guard !statuses.isEmpty else { return drafts }
        var repeated = Set<Int>()
        var seen = Set<SequencerInput.Draft>()
        for index in statuses where !seen.insert(drafts[index].draft).inserted { repeated.insert(index) }
        let rows = try await connection.queryPrepared(RealtimeSQL.sequencedAlready, [
            statuses.map { drafts[$0].draft.channel.name }, statuses.map { drafts[$0].draft.event },
            statuses.map { drafts[$0].json },
        ])
        for row in rows { repeated.insert(statuses[Int(try row.decode(Int64.self, "i")) - 1]) }
        guard !repeated.isEmpty else { return drafts }
        return drafts.indices.filter { !repeated.contains($0) }.map { drafts[$0] }
    }

    public func afterCommit(_ effects: [SequencedChannelEvent]) async throws {
        try await publisher.publish(effects)
    }

    func upsertRooms(_ facts: [SequencerInput.RoomFacts], _ connection: PostgresConnection) async throws {
        guard !facts.isEmpty else { return }
        var latest: [String: SequencerInput.RoomFacts] = [:]
        var order: [String] = []
        for fact in facts {
            if latest[fact.roomID] == nil { order.append(fact.roomID) }
            var merged = fact
            if merged.visibility == nil { merged.visibility = latest[fact.roomID]?.visibility }
            latest[fact.roomID] = merged
        }
        let rooms = order.map { latest[$0]! }
        _ = try await connection.executePrepared(RealtimeSQL.upsertRoom, [
            rooms.map(\.roomID), rooms.map(\.ownerUserID), rooms.map { $0.visibility?.rawValue ?? "" },
        ])
    }
}
