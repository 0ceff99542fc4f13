import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import Ingest
import Postgres
import ServiceRuntime
import Testing

/// `POST`, `GET`, `DELETE /account/deletion` and the upload refusal while a deletion is open,
/// against PostgreSQL and the embedded Kafka cluster (the scheduler is not running: nothing
/// is purged here).
@Suite("Account deletion requests", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(2)))
struct AccountDeletionRoutesTests {
    static func withHarness(_ body: (IngestHarness) async throws -> Void) async throws {
        try await IngestHarness.with { harness in
            _ = try await harness.putMaterial("lesson-shared", MaterialUpsertRequest(readingTargetType: .knowledgeSource))
            try await body(harness)
        }
    }

    static func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test("while scheduled, batches and room uploads get 403 ACCOUNT_DELETION_PENDING and nothing is accepted; another user uploads; a cancel lets uploads in again")
    func uploadsRefusedWhileScheduled() async throws {
        try await Self.withHarness { harness in
            let token = harness.userToken("leaving")
            let scheduled = await harness.request(.post, "/account/deletion", token: token, body: [])
            #expect(scheduled.status == .accepted, "\(Self.text(scheduled))")
            let answer = try scheduled.decoded(AccountDeletionResponse.self)
            #expect(answer.status == .scheduled && !answer.requestId.isEmpty)
            let purgeAt = try #require(answer.purgeAt)
            #expect(abs(purgeAt.timeIntervalSinceNow - 7 * 86_400) < 60, "the default grace period is 7 days")
            #expect(Set(try #require(try JSONSerialization.jsonObject(with: Data(scheduled.body)) as? [String: Any]).keys)
                    == ["requestId", "status", "purgeAt"])

            // Asking again answers the same request.
            let again = try await harness.request(.post, "/account/deletion", token: token, body: []).decoded(AccountDeletionResponse.self)
            #expect(again.requestId == answer.requestId)

            let refused = try await harness.postBatch(user: "leaving", events: [sampleEvent()])
            #expect(refused.status == .forbidden && Self.text(refused).contains("\"ACCOUNT_DELETION_PENDING\""), "\(Self.text(refused))")
            let room = await harness.request(.post, "/rooms/versions", token: token, body: Array("{}".utf8))
            #expect(room.status == .forbidden && Self.text(room).contains("ACCOUNT_DELETION_PENDING"))
            #expect(try await harness.context.database.query("SELECT 1 FROM ingest_accepted_events WHERE user_id = 'leaving'").isEmpty)
            #expect(try await harness.postBatch(user: "staying", events: [sampleEvent()]).status == .ok)

            let shown = try await harness.request(.get, "/account/deletion", token: token, body: []).decoded(AccountDeletionResponse.self)
            #expect(shown.status == .scheduled && shown.requestId == answer.requestId && shown.userIdHash == nil)

            let cancelled = await harness.request(.delete, "/account/deletion", token: token, body: [])
            #expect(cancelled.status == .ok)
            #expect(try cancelled.decoded(AccountDeletionResponse.self).status == .cancelled)
            #expect(try await harness.postBatch(user: "leaving", events: [sampleEvent()]).status == .ok)
            let nothing = await harness.request(.delete, "/account/deletion", token: token, body: [])
            #expect(nothing.status == .notFound && Self.text(nothing).contains("NOT_FOUND"))
            #expect(await harness.request(.get, "/account/deletion", token: token, body: []).status == .notFound)
        }
    }

    @Test("once the purge started a cancel is 409 ACCOUNT_DELETION_STARTED; no token is 401, a service token 403")
    func cancelTooLate() async throws {
        try await Self.withHarness { harness in
            let token = harness.userToken("too-late")
            #expect(await harness.request(.post, "/account/deletion", token: token, body: []).status == .accepted)
            _ = try await harness.context.database.execute("UPDATE account_deletions SET status = 'purging'")
            let late = await harness.request(.delete, "/account/deletion", token: token, body: [])
            #expect(late.status == .conflict && Self.text(late).contains("ACCOUNT_DELETION_STARTED"), "\(Self.text(late))")
            let shown = try await harness.request(.get, "/account/deletion", token: token, body: []).decoded(AccountDeletionResponse.self)
            #expect(shown.status == .purging)
            #expect(await harness.request(.post, "/account/deletion", token: nil, body: []).status == .unauthorized)
            #expect(await harness.request(.post, "/account/deletion", token: harness.serviceToken, body: []).status == .forbidden)
        }
    }
}
