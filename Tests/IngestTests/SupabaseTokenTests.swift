import Auth
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Ingest
import ObjectStore
import ServiceRuntime
import Testing

/// The CrowdRoom app's users sign in with Supabase Auth, which signs their sessions with an
/// ES256 key published as a JWKS. Over real HTTP: ingest in this process with the key set from
/// a file, and the analytics-aggregator executable configured by its environment alone, the
/// key set fetched from a Python `http.server` at its start. Tokens are PyJWT's.
@Suite("Supabase Auth tokens over HTTP", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct SupabaseTokenTests {
    /// `GET url` with a bearer token through curl: the status and the body.
    static func get(_ url: String, token: String? = nil) throws -> (status: Int, body: String) {
        let authorization = token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []
        let result = try Integration.run("curl", ["-s", "--max-time", "10", "-w", "\n%{http_code}"] + authorization + [url])
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    /// The anon key and forgeries: 401 `UNAUTHENTICATED`, saying why.
    static func expectRefusals(_ url: String, _ witness: TokenWitness) throws {
        let anon = try get(url, token: witness.token("anon"))
        #expect(anon.status == 401 && anon.body.contains(#""code":"UNAUTHENTICATED""#), "\(anon)")
        #expect(anon.body.contains("token rejected (anon_key): the anon key identifies the app, not a user"), "\(anon.body)")
        for (name, reason) in [("wrong_audience", "wrong_audience"), ("wrong_issuer", "wrong_issuer"), ("unknown_kid", "unknown_key"),
                               ("hs256_public_pem", "bad_signature"), ("none", "unsupported_algorithm"), ("expired", "expired")] {
            let refused = try get(url, token: witness.token(name))
            #expect(refused.status == 401 && refused.body.contains(#""code":"UNAUTHENTICATED""#), "\(name): \(refused)")
            #expect(refused.body.contains("token rejected (\(reason))"), "\(name): \(refused.body)")
        }
    }

    @Test("ingest's GET /rooms/quota: a Supabase ES256 session (aud authenticated, role authenticated, uuid sub) gets its quota; the anon key is 401 UNAUTHENTICATED")
    func ingestQuota() async throws {
        let witness = try TokenWitness.shared()
        let objects = try FileSystemObjectStore(root: FileManager.default.temporaryDirectory
            .appendingPathComponent("supabase-objects-\(UInt32.random(in: 0...UInt32.max))"))
        let tokens = TokenVerificationSettings(keySet: .file(try witness.keySetFile()), issuer: TokenWitness.issuer,
                                               audience: TokenWitness.audience)
        try await IngestHarness.with(objects: objects, secret: TokenWitness.secret, tokens: tokens) { harness in
            let url = "http://127.0.0.1:\(try await harness.startHTTP())/rooms/quota"
            for name in ["es256", "rs256"] {
                let session = try Self.get(url, token: witness.token(name))
                #expect(session.status == 200, "\(name): \(session)")
                let quota = try ContractCoding.decoder.decode(RoomQuota.self, from: Data(session.body.utf8))
                #expect(quota.usedBytes == 0 && quota.tier == "free" && quota.limitBytes > 0)
            }
            try Self.expectRefusals(url, witness)
            #expect(try Self.get(url).status == 401)
        }
    }

    @Test("a service executable reads JWT_JWKS_URL, JWT_ISSUER and JWT_AUDIENCE from its environment and fetches the key set at start")
    func serviceExecutable() async throws {
        let witness = try TokenWitness.shared()
        let harness = try await IngestHarness()  // the broker
        let database = try await TestDatabase.create("supabase_analytics")
        var processes: [ServiceProcess] = []
        let site = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-site-\(UInt32.random(in: 0...UInt32.max))")
        var provider: Process?
        do {
            for topic in Topics.all { try harness.cluster.createTopic(topic.name, partitions: topic.partitions) }
            // Supabase's path, served by Python's http.server.
            let wellKnown = site.appendingPathComponent("auth/v1/.well-known")
            try FileManager.default.createDirectory(at: wellKnown, withIntermediateDirectories: true)
            try Data(witness.keySet()).write(to: wellKnown.appendingPathComponent("jwks.json"))
            let providerPort = Integration.freePort()
            let requests = site.appendingPathComponent("requests.log")
            _ = FileManager.default.createFile(atPath: requests.path, contents: nil)
            let server = TokenWitness.pythonProcess(["-m", "http.server", String(providerPort), "--bind", "127.0.0.1",
                                                     "--directory", site.path])
            server.standardError = try FileHandle(forWritingTo: requests)  // one line per request
            server.standardOutput = FileHandle.nullDevice
            try server.run()
            provider = server
            let jwksURL = "http://127.0.0.1:\(providerPort)/auth/v1/.well-known/jwks.json"
            #expect(try await Integration.eventually(timeout: .seconds(10)) { try Self.get(jwksURL).status == 200 })
            func fetches() -> Int {
                ((try? String(contentsOf: requests, encoding: .utf8)) ?? "").components(separatedBy: "GET /auth/v1/.well-known/jwks.json").count - 1
            }
            let probes = fetches()

            let port = Integration.freePort()
            processes.append(try ServiceProcess(executable: "analytics-aggregator", environment: [
                "KAFKA_BROKERS": harness.cluster.bootstrapServers, "DATABASE_URL": database.url, "JWT_SECRET": TokenWitness.secret,
                "HTTP_HOST": "127.0.0.1", "HTTP_PORT": String(port), "DATABASE_POOL_SIZE": "4", "KAFKA_SESSION_TIMEOUT_MS": "6000",
                "JWT_JWKS_URL": jwksURL, "JWT_ISSUER": TokenWitness.issuer, "JWT_AUDIENCE": TokenWitness.audience,
            ]))
            let base = "http://127.0.0.1:\(port)"
            let up = try await Integration.eventually(timeout: .seconds(30)) { try Self.get(base + "/healthz").status == 200 }
            #expect(up, "analytics-aggregator did not start: \(processes[0].log.suffix(2000))")
            // Fetched once, at start, before any token asked for it.
            #expect(fetches() == probes + 1)

            let summary = try Self.get(base + "/learning/summary", token: witness.token("es256"))
            #expect(summary.status == 200 && summary.body.contains("currentStreakDays"), "\(summary)")
            try Self.expectRefusals(base + "/learning/summary", witness)
            // Within a minute of the start, the unknown kid does not fetch it again.
            #expect(fetches() == probes + 1)
        } catch {
            Self.stop(provider, processes)
            await database.drop()
            await harness.close()
            throw error
        }
        Self.stop(provider, processes)
        await database.drop()
        await harness.close()
    }

    static func stop(_ provider: Process?, _ processes: [ServiceProcess]) {
        for process in processes { process.terminate() }
        // SIGKILL: the http.server started from the test process was seen to outlive SIGTERM
        // (an ignored signal stays ignored in a child, and `ServiceGroup` ignores SIGTERM to
        // handle it itself), which left this test waiting for it for ever.
        if let provider, provider.isRunning {
            kill(provider.processIdentifier, SIGKILL)
            provider.waitUntilExit()
        }
    }
}
