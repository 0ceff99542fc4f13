import Contracts
import Foundation
import HTTPRouting
import Postgres
import ServiceLogging
import ServiceRuntime

/// `POST /waitlist {email, source?}` — the website's sign-up (seed `003_*` §九 `WaitlistEntry`,
/// §十 Waitlist), no account. The address is validated and kept once (trimmed, lower-cased;
/// the first source wins); the answer is the same 202 whether it was new or already listed, so
/// the route never tells who is on the list. Rate-limited per address and per client address.
///
/// The list is the write edge's own table (`waitlist_entries`, migration 160): nothing
/// downstream reads it, and it names no account, so account deletion has nothing there.
struct WaitlistRoutes: Sendable {
    let database: PostgresClient
    let perAddress: UserRateLimiter
    let perClient: UserRateLimiter
    let retryAfterSeconds: Int
    let logger: Logger
    let clock: @Sendable () -> Date

    struct Accepted: Encodable { let status = "accepted" }

    func register(on router: inout Router) {
        router.post("/waitlist") { try await join($0) }
    }

    func join(_ request: HTTPRequest) async throws -> HTTPResponse {
        try perClient.admit("client:" + request.clientAddress)
        let body = try IngestRequestDecoding.decode(WaitlistRequest.self, from: request)
        do { try body.validate() } catch { throw IngestRequestDecoding.invalidField(error.field, error.message) }
        let email = body.normalizedEmail
        try perAddress.admit("email:" + email)
        do {
            _ = try await database.execute("""
                INSERT INTO waitlist_entries (email, source, created_at) VALUES ($1, $2, $3) ON CONFLICT (email) DO NOTHING
                """, [email, body.source, clock()])
        } catch {
            logger.error("waitlist unavailable", metadata: ["error": "\(error)"])
            throw HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: "the waitlist is unavailable; retry later",
                            headers: ["Retry-After": String(retryAfterSeconds)])
        }
        return .json(Accepted(), status: .accepted, encoder: ContractCoding.encoder)
    }

    static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 160, name: "ingest_waitlist", sql: """
            CREATE TABLE IF NOT EXISTS waitlist_entries (
                email       text        PRIMARY KEY,
                source      text,
                created_at  timestamptz NOT NULL
            );
            """),
    ]
}
