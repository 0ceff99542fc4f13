import Contracts
import Foundation
import Kafka
import Postgres
import Projection
import UserErasure

/// CrowdRoom's social read models (`SocialSchema`): `room.interactions.v1` → comments, likes,
/// profiles, the rooms' counts and the notifications they cause; `room.transcode.status.v1`'s
/// `ready` and `failed` → the owner's transcode notifications. On the projection runner (its
/// own consumer group, offsets in PostgreSQL with the rows), so each record is applied once;
/// and every effect is keyed (a comment by its id, a like by user and room, a notification by
/// the interaction's id or the version and status), so a record the topic holds twice changes
/// nothing the second time. The counts are recounted from the rows for every room a batch
/// touches, never incremented.
///
/// No notification for one's own action; none for a comment removed before it was projected
/// (a removal also removes the notification of the comment); records about an erased account
/// are left out.
public struct SocialProjection: Projection {
    public enum Event: Sendable, Equatable {
        case interaction(RoomInteraction)
        case status(RoomTranscodeStatus)
        /// A record of the status topic the notifications do not need (a stage).
        case ignored
    }
    public typealias Effects = Void

    let interactionsTopic: String
    /// The catalog a remix's fork is written into (its room and first, ready, version), with the
    /// catalog's own merge of a request and a status.
    let catalog: CatalogProjection
    /// Called after every committed batch (the catalog's answer cache drops what it holds).
    let onCommit: @Sendable () -> Void

    public init(interactionsTopic: String = Topics.roomInteractions, catalog: CatalogProjection,
                onCommit: @escaping @Sendable () -> Void = {}) {
        self.interactionsTopic = interactionsTopic
        self.catalog = catalog
        self.onCommit = onCommit
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> Event {
        guard record.topic == interactionsTopic else {
            let status = try ContractCoding.decode(RoomTranscodeStatus.self, from: record.value)
            guard status.status == .ready || status.status == .failed else { return .ignored }
            for value in [status.roomId, status.versionId, status.ownerUserId] where !Identifier.isValid(value) {
                throw InvalidRecord(description: "roomId, versionId and ownerUserId must be identifiers")
            }
            return .status(status)
        }
        let interaction = try ContractCoding.decode(RoomInteraction.self, from: record.value)
        try Self.validate(interaction)
        return .interaction(interaction)
    }

    /// What every record must hold for its kind (ingest writes nothing else; a hostile producer might).
    static func validate(_ i: RoomInteraction) throws {
        func require(_ value: String?, _ name: String) throws {
            guard let value, Identifier.isValid(value) else {
                throw InvalidRecord(description: "\(i.kind.rawValue) needs \(name): \(Identifier.rule)")
            }
        }
        try require(i.interactionId, "interactionId")
        try require(i.actorId, "actorId")
        switch i.kind {
        case .commentCreated, .commentDeleted:
            try require(i.roomId, "roomId")
            try require(i.roomOwnerId, "roomOwnerId")
            try require(i.commentId, "commentId")
            try require(i.commentAuthorId, "commentAuthorId")
            guard let body = i.body, !body.isEmpty, body.count <= RoomInteraction.maxBodyCharacters else {
                throw InvalidRecord(description: "a comment's body has 1–\(RoomInteraction.maxBodyCharacters) characters")
            }
        case .likeAdded, .likeRemoved:
            try require(i.roomId, "roomId")
        case .remixCreated:
            try require(i.roomId, "roomId")
            try require(i.roomOwnerId, "roomOwnerId")
            try require(i.forkRoomId, "forkRoomId")
            try require(i.forkVersionId, "forkVersionId")
            guard let keys = i.outputKeys, keys.count <= 1_000, let fork = i.forkRoomId, let version = i.forkVersionId,
                  keys.allSatisfy({ $0.hasPrefix("rooms/\(fork)/\(version)/") && $0.utf8.count <= 1_024 }),
                  (i.title?.count ?? 0) <= 1_000, (i.tags?.count ?? 0) <= 100, (i.sourceQualityGrade?.utf8.count ?? 0) <= 16 else {
                throw InvalidRecord(description: "a remix names at most 1000 copies, each in the fork's folder, a title and tags")
            }
        case .profileUpdated:
            guard (i.displayName?.count ?? 0) <= RoomInteraction.maxDisplayNameCharacters,
                  (i.avatarPath?.utf8.count ?? 0) <= RoomInteraction.maxAvatarPathBytes else {
                throw InvalidRecord(description: "display name or avatar path too long")
            }
        }
    }

    /// The users a record is about (an erased one's records are left out). A remix is the
    /// remixer's: her fork outlives the source's owner (whose erasure only clears the fork's
    /// `remixed_from`), so only her own erasure leaves it out.
    static func users(_ event: Event) -> [String] {
        switch event {
        case .interaction(let i) where i.kind == .remixCreated: [i.actorId]
        case .interaction(let i): [i.actorId] + [i.roomOwnerId, i.commentAuthorId].compactMap { $0 }
        case .status(let s): [s.ownerUserId]
        case .ignored: []
        }
    }

    public func apply(_ events: [ProjectedEvent<Event>], in connection: PostgresConnection) async throws {
        let erased = try await ErasedUsers(service: TranscodeErasure.service)
            .erased(among: Set(events.lazy.flatMap { Self.users($0.event) + Self.sourceOwner($0.event) }), in: connection)
        var touched: [String] = []
        for item in events where Self.users(item.event).allSatisfy({ !erased.contains($0) }) {
            switch item.event {
            case .ignored: continue
            case .status(let status): try await notify(status, connection)
            case .interaction(let interaction) where interaction.kind == .remixCreated:
                // The source's owner erased: the fork stays hers alone, naming and counting no source.
                let sourceKept = !erased.contains(interaction.roomOwnerId ?? "")
                try await fork(interaction, naming: sourceKept, connection)
                touched.append(interaction.forkRoomId!)
                if sourceKept { touched.append(interaction.roomId!) }
            case .interaction(let interaction):
                try await apply(interaction, connection)
                if let room = interaction.roomId { touched.append(room) }
            }
        }
        guard !touched.isEmpty else { return }
        _ = try await connection.executePrepared(SocialSQL.recount, [Array(Set(touched)).sorted()])
    }

    func apply(_ i: RoomInteraction, _ connection: PostgresConnection) async throws {
        let at = ContractCoding.formatTimestamp(i.at)
        switch i.kind {
        case .commentCreated:
            _ = try await connection.executePrepared(SocialSQL.insertComment, [i.commentId!, i.roomId!, i.roomOwnerId!, i.commentAuthorId!,
                                                                       i.body!, at])
            if i.roomOwnerId != i.actorId {
                _ = try await connection.executePrepared(SocialSQL.notifyComment, [
                    i.interactionId, i.roomOwnerId!, i.roomId!, i.actorId, i.commentId!, RoomInteraction.excerpt(i.body) ?? "", at])
            }
        case .commentDeleted:
            _ = try await connection.executePrepared(SocialSQL.deleteComment, [i.commentId!, i.roomId!, i.roomOwnerId!, i.commentAuthorId!,
                                                                       i.body!, at])
        case .likeAdded:
            _ = try await connection.executePrepared(SocialSQL.insertLike, [i.roomId!, i.actorId, at])
            if let owner = i.roomOwnerId, owner != i.actorId {
                _ = try await connection.executePrepared(SocialSQL.notify, [i.interactionId, owner, "like", i.roomId!, "", i.actorId, "", "", at])
            }
        case .likeRemoved:
            _ = try await connection.executePrepared(SocialSQL.deleteLike, [i.roomId!, i.actorId])
        case .remixCreated:
            try await fork(i, naming: true, connection)
        case .profileUpdated:
            _ = try await connection.executePrepared(SocialSQL.upsertProfile, [i.actorId, i.displayName, i.avatarPath, at])
        }
    }

    /// A remix's source owner, whose erasure the record only needs to know of.
    static func sourceOwner(_ event: Event) -> [String] {
        guard case .interaction(let i) = event, i.kind == .remixCreated, let owner = i.roomOwnerId else { return [] }
        return [owner]
    }

    /// The fork's room and its first version, ready with the copies; with `naming`, the
    /// source's remix count and its owner's notification (opening the fork).
    func fork(_ i: RoomInteraction, naming: Bool, _ connection: PostgresConnection) async throws {
        let (fork, version, source) = (i.forkRoomId!, i.forkVersionId!, i.roomId!)
        try await catalog.apply(try await Self.forkEvents(i, connection).map {
            ProjectedEvent(event: $0, topic: "", partition: -1, offset: -1)
        }, in: connection)
        guard naming else { return }
        _ = try await connection.executePrepared(SocialSQL.remixedFrom, [fork, source])
        if i.roomOwnerId != i.actorId {
            _ = try await connection.executePrepared(SocialSQL.notify, [i.interactionId, i.roomOwnerId!, "remix", fork, version, i.actorId, "",
                                                                 i.title ?? "", ContractCoding.formatTimestamp(i.at)])
        }
    }

    /// What a remix (validated) is to the room catalog: the fork's request and its ready status,
    /// with the copies and the source version's grade. Both the social projection and
    /// `backbone rebuild catalog` (which replays the remixes with the catalog's topics) make the
    /// fork's rows from this. The grade is the one the record carries; a record written before
    /// it was carried takes the source version's in the catalog this connection writes, else in
    /// the live one (`public`: a rebuild's shadow may not hold the source's status yet when it
    /// meets the remix, which is on another topic).
    public static func forkEvents(_ i: RoomInteraction, _ connection: PostgresConnection) async throws -> [CatalogProjection.Event] {
        let (fork, version) = (i.forkRoomId!, i.forkVersionId!)
        let keys = i.outputKeys ?? []
        var grade = i.sourceQualityGrade
        if grade == nil {
            grade = try await connection.query("""
                SELECT COALESCE((SELECT quality_grade FROM catalog_versions WHERE version_id = $1),
                                (SELECT quality_grade FROM public.catalog_versions WHERE version_id = $1)) AS quality_grade
                """, [i.sourceVersionId ?? ""]).first?.decode(String?.self, "quality_grade")
        }
        let folder = "rooms/\(fork)/\(version)/"
        let request = RoomTranscodeRequest(ownerUserId: i.actorId, request: RoomVersionCompleteRequest(
            roomId: fork, versionId: version, title: i.title ?? "", tags: i.tags ?? [], visibility: .public,
            source: RoomSource(usdzKey: folder + "source.usdz", usdzBytes: 0, roomplanJsonKey: folder + "roomplan.json",
                               roomplanJsonBytes: 0),
            redactions: []), requestedAt: i.at)
        let status = RoomTranscodeStatus(
            roomId: fork, versionId: version, ownerUserId: i.actorId, visibility: .public, status: .ready,
            manifestKey: keys.first { $0.hasSuffix("manifest.json") }, thumbnailKey: keys.first { $0.hasSuffix("/thumbnail.png") },
            glbKeys: keys.filter { $0.hasSuffix(".glb") }.sorted(), qualityGrade: grade, at: i.at)
        return [.request(request), .status(status)]
    }

    func notify(_ status: RoomTranscodeStatus, _ connection: PostgresConnection) async throws {
        let kind = status.status == .ready ? "transcode_ready" : "transcode_failed"
        _ = try await connection.executePrepared(SocialSQL.notify, [
            "transcode:\(status.versionId):\(status.status.rawValue)", status.ownerUserId, kind, status.roomId, status.versionId,
            "", "", status.code?.rawValue ?? "", ContractCoding.formatTimestamp(status.at)])
    }

    public func afterCommit(_ effects: Void) async throws { onCommit() }
}

/// The social projection's SQL.
enum SocialSQL {
    /// A comment, unless it is known (a removed one stays removed).
    static let insertComment = """
        INSERT INTO catalog_comments (comment_id, room_id, room_owner_id, author_id, body, created_at)
        VALUES ($1, $2, $3, $4, $5, $6::timestamptz) ON CONFLICT (comment_id) DO NOTHING
        """

    /// The comment's notification, unless the comment was removed already.
    static let notifyComment = """
        INSERT INTO catalog_notifications (notification_id, user_id, kind, room_id, actor_id, comment_id, excerpt, created_at)
        SELECT $1, $2, 'comment', $3, $4, $5, NULLIF($6, ''), $7::timestamptz
        WHERE NOT EXISTS (SELECT 1 FROM catalog_comments WHERE comment_id = $5 AND deleted_at IS NOT NULL)
        ON CONFLICT (notification_id) DO NOTHING
        """

    /// Removes a comment (a tombstone when it was never seen) and the notification it caused;
    /// `deleted_at` is the removal's time from the record, so a replay or a rebuild writes the
    /// same row.
    static let deleteComment = """
        WITH gone AS (DELETE FROM catalog_notifications WHERE comment_id = $1)
        INSERT INTO catalog_comments (comment_id, room_id, room_owner_id, author_id, body, created_at, deleted_at)
        VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $6::timestamptz)
        ON CONFLICT (comment_id) DO UPDATE SET deleted_at = COALESCE(catalog_comments.deleted_at, EXCLUDED.deleted_at)
        """

    static let insertLike = """
        INSERT INTO catalog_likes (room_id, user_id, created_at) VALUES ($1, $2, $3::timestamptz)
        ON CONFLICT (room_id, user_id) DO NOTHING
        """

    /// Removes a like and the notification it caused.
    static let deleteLike = """
        WITH gone AS (DELETE FROM catalog_notifications WHERE kind = 'like' AND room_id = $1 AND actor_id = $2)
        DELETE FROM catalog_likes WHERE room_id = $1 AND user_id = $2
        """

    /// A notification (`""` = none for the optional columns), once.
    static let notify = """
        INSERT INTO catalog_notifications (notification_id, user_id, kind, room_id, version_id, actor_id, comment_id, excerpt, created_at)
        VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), NULLIF($8, ''), $9::timestamptz)
        ON CONFLICT (notification_id) DO NOTHING
        """

    /// The profile as written, unless a newer write was applied already.
    static let upsertProfile = """
        INSERT INTO catalog_profiles AS p (user_id, display_name, avatar_path, created_at, updated_at)
        VALUES ($1, $2, $3, $4::timestamptz, $4::timestamptz)
        ON CONFLICT (user_id) DO UPDATE SET display_name = EXCLUDED.display_name, avatar_path = EXCLUDED.avatar_path,
            updated_at = EXCLUDED.updated_at
        WHERE EXCLUDED.updated_at >= p.updated_at
        """

    /// A fork's source.
    static let remixedFrom = """
        INSERT INTO catalog_room_social (room_id, remixed_from) VALUES ($1, $2)
        ON CONFLICT (room_id) DO UPDATE SET remixed_from = EXCLUDED.remixed_from
        """

    /// The likes, comments and remixes of rooms `$1`, counted from the rows.
    static let recount = """
        INSERT INTO catalog_room_social AS s (room_id, like_count, comment_count, remix_count)
        SELECT r, (SELECT count(*) FROM catalog_likes l WHERE l.room_id = r),
               (SELECT count(*) FROM catalog_comments c WHERE c.room_id = r AND c.deleted_at IS NULL),
               (SELECT count(*) FROM catalog_room_social x WHERE x.remixed_from = r)
        FROM unnest($1::text[]) AS r
        ON CONFLICT (room_id) DO UPDATE SET like_count = EXCLUDED.like_count, comment_count = EXCLUDED.comment_count,
            remix_count = EXCLUDED.remix_count
        """
}

extension RoomCatalog {
    /// The social read models' projection; its commits invalidate the catalog's cached answers.
    public func socialProjection(interactionsTopic: String = Topics.roomInteractions) -> SocialProjection {
        let cache = self.cache
        return SocialProjection(interactionsTopic: interactionsTopic, catalog: projection(requestsTopic: Topics.roomTranscodeRequests),
                                onCommit: { cache.invalidate() })
    }
}
