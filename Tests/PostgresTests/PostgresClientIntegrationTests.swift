import BackboneTestSupport
import Foundation
import Postgres
import ServiceLogging
import Synchronization
import Testing

@Suite("PostgresClient against a real database", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct PostgresClientIntegrationTests {
    static let tricky = "it's \"quoted\" \\ back\\slash\ttab\nnewline\r\n 中文 ✓ émoji 🎉 \\N"

    @Test("every bindable type round-trips, including NULLs, unicode and escape characters")
    func roundTrip() async throws {
        let client = TestPostgres.client()
        let table = TestPostgres.uniqueName("types")
        try await client.execute("""
            CREATE TABLE \(table) (id int, s text, i bigint, i32 int, d double precision, n numeric, b boolean,
            ts timestamptz, u uuid, bytes bytea, j jsonb, tags text[], nums bigint[])
            """)
        let date = Date(timeIntervalSince1970: 1_767_225_845.123456)
        let uuid = UUID()
        let bytes: [UInt8] = [0, 1, 0x5C, 0x09, 0xFF]
        let tags = [Self.tricky, "b,c", "{}"]
        try await client.execute(
            "INSERT INTO \(table) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            [1, Self.tricky, Int64.max, Int32.min, 3.25, 12.5, true, date, uuid, bytes,
             PostgresJSON(#"{"k": "v\"q", "n": [1, 2]}"#), tags, [Int64(1), -2]])
        try await client.execute("INSERT INTO \(table) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            [2, nil as String?, nil as Int64?, nil as Int32?, nil as Double?, nil as Double?, nil as Bool?, nil as Date?,
             nil as UUID?, nil as [UInt8]?, nil as PostgresJSON?, nil as [String]?, nil as [Int64]?])

        let rows = try await client.query("SELECT * FROM \(table) ORDER BY id")
        #expect(rows.count == 2)
        let row = rows[0]
        #expect(try row.decode(String.self, "s") == Self.tricky)
        #expect(try row.decode(Int64.self, "i") == Int64.max)
        #expect(try row.decode(Int32.self, "i32") == Int32.min)
        #expect(try row.decode(Double.self, "d") == 3.25)
        #expect(try row.decode(Double.self, "n") == 12.5)
        #expect(try row.decode(Bool.self, "b") == true)
        #expect(abs(try row.decode(Date.self, "ts").timeIntervalSince(date)) < 0.000_002)
        #expect(try row.decode(UUID.self, "u") == uuid)
        #expect(try row.decode([UInt8].self, "bytes") == bytes)
        let json = try row.decode(PostgresJSON.self, "j").decode([String: AnyCodableValue].self)
        #expect(json["k"] == .string("v\"q"))
        #expect(try row.decode([String].self, "tags") == tags)
        #expect(try row.decode([Int64].self, "nums") == [1, -2])
        #expect(try row.decode(Int.self, 0) == 1)

        let nulls = rows[1]
        #expect(try nulls.decode(String?.self, "s") == nil)
        #expect(try nulls.decode(Date?.self, "ts") == nil)
        #expect(try nulls.decode([UInt8]?.self, "bytes") == nil)
        do {
            _ = try nulls.decode(Int64.self, "i")
            Issue.record("NULL decoded into a non-optional")
        } catch {
            #expect(error.code == .decoding)
            #expect(error.context["pg.column"] == "i")
        }
        do {
            _ = try row.decode(Int64.self, "s")
            Issue.record("text decoded as Int64")
        } catch {
            #expect(error.code == .decoding)
            #expect(error.description.contains("s"))
        }
        try await client.execute("DROP TABLE \(table)")
        await client.close()
    }

    @Test("COPY loads tricky strings, NULLs and every type exactly as plain inserts do")
    func copy() async throws {
        let client = TestPostgres.client()
        let table = TestPostgres.uniqueName("copy")
        try await client.execute("CREATE TABLE \(table) (id bigint, s text, ts timestamptz, bytes bytea, j jsonb, ok boolean)")
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        var rows: [[any PostgresBindable]] = []
        for index in 0..<5000 {
            let text: String? = index % 10 == 0 ? nil : Self.tricky + String(index)
            let bytes: [UInt8] = [UInt8(index % 256), 0x5C]
            let json = PostgresJSON(#"{"i": \#(index)}"#)
            rows.append([Int64(index), text, date, bytes, json, index % 2 == 0])
        }
        let copied = try await client.withConnection { connection in
            try await connection.copy(into: table, columns: ["id", "s", "ts", "bytes", "j", "ok"], rows: rows)
        }
        #expect(copied == 5000)
        let check = try await client.query("SELECT s, ts, bytes, j->>'i' AS i, ok FROM \(table) WHERE id = $1", [Int64(7)])
        let row = try #require(check.first)
        #expect(try row.decode(String.self, "s") == Self.tricky + "7")
        #expect(try row.decode(Date.self, "ts") == date)
        #expect(try row.decode([UInt8].self, "bytes") == [7, 0x5C])
        #expect(try row.decode(String.self, "i") == "7")
        #expect(try row.decode(Bool.self, "ok") == false)
        let nulls = try await client.query("SELECT count(*) AS n FROM \(table) WHERE s IS NULL")
        #expect(try nulls[0].decode(Int64.self, "n") == 500)
        try await client.execute("DROP TABLE \(table)")
        await client.close()
    }

    @Test("a throwing transaction body rolls back and rethrows the original error")
    func rollback() async throws {
        let client = TestPostgres.client()
        let table = TestPostgres.uniqueName("tx")
        try await client.execute("CREATE TABLE \(table) (id int)")
        do {
            _ = try await client.withTransaction { connection -> Int in
                try await connection.execute("INSERT INTO \(table) VALUES (1)")
                throw MarkerError(tag: "boom")
            }
            Issue.record("transaction body error was swallowed")
        } catch let error as MarkerError {
            #expect(error == MarkerError(tag: "boom"))
        }
        #expect(try await client.query("SELECT id FROM \(table)").count == 0)

        let committed = try await client.withTransaction(isolation: .serializable) { connection in
            try await connection.execute("INSERT INTO \(table) VALUES (2)")
        }
        #expect(committed == 1)
        #expect(try await client.query("SELECT id FROM \(table)").count == 1)

        // A failed statement swallowed inside the body: COMMIT turns into ROLLBACK → typed error.
        await #expect(throws: PostgresError.self) {
            try await client.withTransaction { connection in
                try await connection.execute("INSERT INTO \(table) VALUES (3)")
                _ = try? await connection.execute("SELECT 1/0")
            }
        }
        // A savepoint keeps the outer transaction alive.
        try await client.withTransaction { connection in
            try await connection.execute("INSERT INTO \(table) VALUES (4)")
            _ = try? await connection.withSavepoint { inner in try await inner.execute("SELECT 1/0") }
            try await connection.execute("INSERT INTO \(table) VALUES (5)")
        }
        let ids = try await client.query("SELECT id FROM \(table) ORDER BY id").map { try $0.decode(Int.self, "id") }
        #expect(ids == [2, 4, 5])
        try await client.execute("DROP TABLE \(table)")
        await client.close()
    }

    @Test("a unique violation reports SQLSTATE 23505 without SQL or values, and the connection stays usable")
    func uniqueViolation() async throws {
        let client = TestPostgres.client(maxConnections: 1)
        let table = TestPostgres.uniqueName("uniq")
        try await client.execute("CREATE TABLE \(table) (k text PRIMARY KEY)")
        try await client.execute("INSERT INTO \(table) VALUES ($1)", ["secret-value"])
        do {
            try await client.execute("INSERT INTO \(table) /* marker-sql-text */ VALUES ($1)", ["secret-value"])
            Issue.record("duplicate insert succeeded")
        } catch {
            #expect(error.sqlState == "23505")
            #expect(error.isUniqueViolation)
            #expect(!error.isRetriable)
            #expect(!error.description.contains("marker-sql-text"))
            #expect(!error.description.contains("INSERT"))
            #expect(!error.description.contains("secret-value"))
        }
        #expect(client.openConnections == 1)
        #expect(try await client.query("SELECT count(*) AS n FROM \(table)")[0].decode(Int64.self, "n") == 1)
        #expect(await client.ping())
        try await client.execute("DROP TABLE \(table)")
        await client.close()
    }

    @Test("50 concurrent tasks share 4 connections: the server never sees more than 4 and all finish")
    func poolLimit() async throws {
        let application = TestPostgres.uniqueName("pool")
        let client = TestPostgres.client(maxConnections: 4, acquireTimeout: .seconds(60), applicationName: application)
        let observer = TestPostgres.client(maxConnections: 1)
        let progress = PoolProgress()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask {
                    let rows = try await client.query("SELECT $1::int AS n, pg_sleep(0.05)", [index])
                    #expect(try rows[0].decode(Int.self, "n") == index)
                    progress.finished.add(1, ordering: .relaxed)
                }
            }
            group.addTask {
                while progress.finished.load(ordering: .relaxed) < 50 {
                    let rows = try await observer.query(
                        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [application])
                    let seen = try rows[0].decode(Int.self, "n")
                    progress.maxSeen.withLock { $0 = max($0, seen) }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            try await group.waitForAll()
        }
        #expect(progress.finished.load(ordering: .relaxed) == 50)
        let peak = progress.maxSeen.withLock { $0 }
        #expect(peak <= 4)
        #expect(peak >= 2)
        #expect(client.openConnections <= 4)
        await client.close()
        await observer.close()
    }

    @Test("waiting longer than acquireTimeout for a connection fails with poolTimeout")
    func acquireTimeout() async throws {
        let client = TestPostgres.client(maxConnections: 1, acquireTimeout: .milliseconds(200))
        let clock = ContinuousClock()
        try await client.withConnection { _ in
            let start = clock.now
            do throws(PostgresError) {
                _ = try await client.query("SELECT 1")
                Issue.record("second acquire succeeded beyond maxConnections")
            } catch {
                #expect(error.code == .poolTimeout)
                #expect(error.isRetriable)
            }
            #expect(clock.now - start >= .milliseconds(150))

            // A waiter whose task is cancelled stops waiting at once.
            let waiter = Task { try await client.query("SELECT 1") }
            try await Task.sleep(for: .milliseconds(50))
            waiter.cancel()
            switch await waiter.result {
            case .success: Issue.record("cancelled waiter got a connection")
            case .failure(let error): #expect((error as? PostgresError)?.code == .cancelled)
            }
            #expect(client.openConnections == 1)
        }
        #expect(try await client.query("SELECT 1").count == 1)
        await client.close()
        await #expect(throws: PostgresError.self) { try await client.query("SELECT 1") }
    }

    @Test("waiters arriving one after another each time out acquireTimeout after their own arrival; a served one does not")
    func staggeredAcquireTimeouts() async throws {
        let client = TestPostgres.client(maxConnections: 1, acquireTimeout: .milliseconds(400))
        let clock = ContinuousClock()
        /// How long a query waited, and how it ended.
        @Sendable func timedQuery() async -> (waited: Duration, code: PostgresError.Code?) {
            let start = clock.now
            do throws(PostgresError) {
                _ = try await client.query("SELECT 1")
                return (clock.now - start, nil)
            } catch {
                return (clock.now - start, error.code)
            }
        }
        try await client.withConnection { _ in
            let first = Task { await timedQuery() }
            try await Task.sleep(for: .milliseconds(200))
            let second = Task { await timedQuery() }
            let (firstWaited, firstCode) = await first.value
            #expect(firstCode == .poolTimeout)
            #expect(firstWaited >= .milliseconds(350))
            // The second waiter is still waiting when the first one's deadline passes.
            let (secondWaited, secondCode) = await second.value
            #expect(secondCode == .poolTimeout)
            #expect(secondWaited >= .milliseconds(350), "timed out at the first waiter's deadline")
            #expect(secondWaited < .seconds(3))
            // With the queue empty again, a new waiter still times out (the timer re-arms).
            let (lateWaited, lateCode) = await timedQuery()
            #expect(lateCode == .poolTimeout && lateWaited >= .milliseconds(350))
        }
        // A waiter served before its deadline gets the connection, and the timer that fires
        // later fails only waiters whose own deadline passed.
        let holder = Task { try await client.withConnection { _ in try await Task.sleep(for: .milliseconds(250)) } }
        try await Task.sleep(for: .milliseconds(50))
        let served = Task { await timedQuery() }
        try await Task.sleep(for: .milliseconds(250))
        let afterwards = Task { await timedQuery() }
        #expect(await served.value.code == nil)
        #expect(await afterwards.value.code == nil)
        try await holder.value
        #expect(client.openConnections == 1)
        await client.close()
    }

    @Test("cancelling the awaiting task cancels a long statement on the server and keeps the connection usable")
    func cancellation() async throws {
        let client = TestPostgres.client(maxConnections: 1)
        let clock = ContinuousClock()
        let start = clock.now
        let task = Task { try await client.query("SELECT pg_sleep(30)") }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        switch await task.result {
        case .success:
            Issue.record("cancelled sleep completed")
        case .failure(let error):
            #expect((error as? PostgresError)?.sqlState == "57014")
        }
        #expect(clock.now - start < .seconds(10))
        #expect(try await client.query("SELECT 1 AS one")[0].decode(Int.self, "one") == 1)
        #expect(client.openConnections == 1)
        await client.close()
    }

    @Test("an idle connection killed by the server is discarded and the next query gets a fresh one")
    func brokenConnection() async throws {
        let client = TestPostgres.client(maxConnections: 1)
        let admin = TestPostgres.client(maxConnections: 1)
        let pid = try await client.query("SELECT pg_backend_pid() AS pid")[0].decode(Int32.self, "pid")
        _ = try await admin.query("SELECT pg_terminate_backend($1)", [pid])
        // Until the backend is gone (it can take longer than a moment on a loaded machine).
        for _ in 0..<100 {
            if try await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid]).isEmpty { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .milliseconds(50))
        // The idle connection is checked before reuse, so the caller never sees the dead one.
        let newPID = try await client.query("SELECT pg_backend_pid() AS pid")[0].decode(Int32.self, "pid")
        #expect(newPID != pid)
        #expect(client.openConnections == 1)

        // Killed while in use: the caller gets a retriable error, the pool recovers.
        let busyPID = newPID
        async let sleeper = client.query("SELECT pg_sleep(5)")
        try await Task.sleep(for: .milliseconds(300))
        _ = try await admin.query("SELECT pg_terminate_backend($1)", [busyPID])
        do {
            _ = try await sleeper
            Issue.record("query on a terminated backend succeeded")
        } catch let error as PostgresError {
            #expect(error.isRetriable)
            #expect(error.code == .connectionLost)
        }
        #expect(try await client.query("SELECT 1 AS one")[0].decode(Int.self, "one") == 1)
        await client.close()
        await admin.close()
    }
}

extension PostgresClientIntegrationTests {
    @Test("prepared queries return what plain ones do, and a connection killed while idle is replaced")
    func preparedQueries() async throws {
        let client = TestPostgres.client(maxConnections: 1)
        let admin = TestPostgres.client(maxConnections: 1)
        let table = TestPostgres.uniqueName("prepared")
        try await client.execute("CREATE TABLE \(table) (id int PRIMARY KEY, name text, at timestamptz)")
        try await client.execute("INSERT INTO \(table) SELECT g, 'n' || g, now() FROM generate_series(1, 5) g")
        let sql = "SELECT id, name FROM \(table) WHERE id = $1 OR name = $2 ORDER BY id"
        for id in 1...5 {
            let prepared = try await client.queryPrepared(sql, [id, "n5"])
            let plain = try await client.query(sql, [id, "n5"])
            #expect(prepared.map { try? $0.decode(String.self, "name") } == plain.map { try? $0.decode(String.self, "name") })
        }
        #expect(try await client.queryPrepared(sql, [99, nil as String?]).isEmpty)
        // A failing statement is a typed error and does not poison the connection.
        await #expect(throws: PostgresError.self) { try await client.queryPrepared("SELECT 1 / $1::int AS q", [0]) }
        #expect(try await client.queryPrepared("SELECT 1 / $1::int AS q", [1])[0].decode(Int.self, "q") == 1)

        let pid = try await client.queryPrepared("SELECT pg_backend_pid() AS pid")[0].decode(Int32.self, "pid")
        _ = try await admin.query("SELECT pg_terminate_backend($1)", [pid])
        try await Task.sleep(for: .milliseconds(200))
        let newPID = try await client.queryPrepared("SELECT pg_backend_pid() AS pid")[0].decode(Int32.self, "pid")
        #expect(newPID != pid)
        #expect(try await client.queryPrepared(sql, [2, "n5"]).count == 2)
        #expect(client.openConnections == 1)
        try await client.execute("DROP TABLE \(table)")
        await client.close()
        await admin.close()
    }

    @Test("a prepared statement sent from the task thread itself: long answers and binds arrive whole, a cancelled one stops on the server, 40 tasks share 3 connections")
    func preparedFromTheTask() async throws {
        let client = TestPostgres.client(maxConnections: 3)
        // Prepared on first use (the connection's queue), then sent from the task (SocketReadiness).
        let series = "SELECT g, repeat('x', $2::int) AS pad FROM generate_series(1, $1::int) g"
        for _ in 0..<3 { _ = try await client.queryPrepared(series, [1, 1]) }
        // Many TCP segments of answer, and a bind larger than a socket buffer.
        let rows = try await client.queryPrepared(series, [20_000, 100])
        #expect(rows.count == 20_000)
        #expect(try rows[19_999].decode(Int.self, "g") == 20_000)
        #expect(try rows[0].decode(String.self, "pad").count == 100)
        let big = String(repeating: "é", count: 1_500_000)
        let echo = "SELECT length($1::text) AS n"
        for _ in 0..<3 { _ = try await client.queryPrepared(echo, ["a"]) }
        #expect(try await client.queryPrepared(echo, [big])[0].decode(Int.self, "n") == 1_500_000)

        // Cancelled while waiting for its answer: the server stops it, the connections stay usable.
        let sleep = "SELECT pg_sleep($1::float8) AS slept"
        for _ in 0..<3 { _ = try await client.queryPrepared(sleep, [0.0]) }
        let clock = ContinuousClock()
        let start = clock.now
        let task = Task { try await client.queryPrepared(sleep, [30.0]) }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        switch await task.result {
        case .success: Issue.record("cancelled sleep completed")
        case .failure(let error): #expect((error as? PostgresError)?.sqlState == "57014")
        }
        #expect(clock.now - start < .seconds(10))

        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 1...40 {
                group.addTask { try await client.queryPrepared(series, [index, 1]).count }
            }
            return try await group.reduce(0, +)
        }
        #expect(answers == (1...40).reduce(0, +))
        #expect(client.openConnections <= 3)
        await client.close()
    }
}

/// Counters shared by the pool-limit test's tasks.
final class PoolProgress: Sendable {
    let maxSeen = Mutex(0)
    let finished = Atomic<Int>(0)
}

/// Minimal JSON value for checking decoded jsonb.
enum AnyCodableValue: Codable, Equatable {
    case string(String), number(Double), array([AnyCodableValue]), other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) { self = .string(string) }
        else if let number = try? container.decode(Double.self) { self = .number(number) }
        else if let array = try? container.decode([AnyCodableValue].self) { self = .array(array) }
        else { self = .other }
    }

    func encode(to encoder: any Encoder) throws {}

}
