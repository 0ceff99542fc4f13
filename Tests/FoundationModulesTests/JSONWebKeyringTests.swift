import Auth
import BackboneTestSupport
import Foundation
import HTTPRouting
import HTTPServer
import ServiceLogging
import Synchronization
import Testing

/// A JWKS endpoint on loopback, as Supabase serves `/auth/v1/.well-known/jwks.json`: the test
/// sets the document it serves (nil: the provider is down, 503) and counts the fetches.
final class KeySetEndpoint: Sendable {
    private let state = Mutex<(document: [UInt8]?, fetches: Int)>((nil, 0))

    func serve(_ document: [UInt8]?) { state.withLock { $0.document = document } }

    var fetches: Int { state.withLock { $0.fetches } }

    /// Serves on an ephemeral port while `body` runs; `body` gets the JWKS URL.
    func run(_ body: (String) async throws -> Void) async throws {
        var router = Router()
        router.get("/auth/v1/.well-known/jwks.json") { [self] _ in
            let document = state.withLock { state in
                state.fetches += 1
                return state.document
            }
            guard let document else { return HTTPResponse(status: .serviceUnavailable, body: Array("upstream down".utf8)) }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: document)
        }
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), router: router, logger: .disabled)
        try server.start()
        do {
            try await body("http://127.0.0.1:\(server.port)/auth/v1/.well-known/jwks.json")
        } catch {
            await server.shutdown(gracePeriod: .seconds(1))
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(1))
    }
}

@Suite("JWKS from a URL: fetched at start, read again on an unknown kid at most once per interval, kept while the URL is down",
       .enabled(if: TokenWitness.isAvailable), .timeLimit(.minutes(1)))
struct JSONWebKeyringTests {
    let witness: TokenWitness

    init() throws { witness = try TokenWitness.shared() }

    /// The code `verifyRefreshingKeys` refuses `token` with, nil when it accepts it.
    static func refusal(_ token: String, _ codec: JWTCodec) async -> AuthError.Code? {
        do {
            _ = try await codec.verifyRefreshingKeys(token)
            return nil
        } catch {
            return error.code
        }
    }

    static func loadFailure(_ ring: JSONWebKeyring, atStart: Bool = false) async -> KeySetError.Code? {
        do {
            if atStart { try await ring.start() } else { try await ring.load() }
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a key the provider adds is fetched on its first token once the interval has passed, one fetch for concurrent tokens; while the URL is down the last good set stays")
    func refreshOnUnknownKey() async throws {
        let (es1, es2, es3) = (try witness.token("es256"), try witness.token("es256_es2"), try witness.token("es256_es3"))
        let endpoint = KeySetEndpoint()
        endpoint.serve(witness.keySet(["es-1"]))
        try await endpoint.run { url in
            // Injectable in place of a minute; long enough that the steps "within the interval"
            // below run well within it on a loaded machine.
            let interval: Duration = .seconds(2)
            let ring = JSONWebKeyring(source: .url(url), refreshInterval: interval, logger: .disabled)
            try await ring.start()
            #expect(endpoint.fetches == 1)
            // No cache: every check goes to the key set in use.
            let codec = JWTCodec(secret: TokenWitness.secret, keys: ring, cacheCapacity: 0)
            #expect(await Self.refusal(es1, codec) == nil)

            // es-2 appears at the provider; within the interval since the start, a token naming
            // it is refused without a fetch.
            endpoint.serve(witness.keySet(["es-1", "es-2"]))
            #expect(await Self.refusal(es2, codec) == .unknownKey)
            #expect(endpoint.fetches == 1)

            // Past the interval, twenty requests at once with es-2 tokens: one fetch, all accepted.
            try await Task.sleep(for: interval)
            let refusals = await withTaskGroup(of: AuthError.Code?.self) { group in
                for _ in 0..<20 { group.addTask { await Self.refusal(es2, codec) } }
                return await group.reduce(into: [AuthError.Code?]()) { $0.append($1) }
            }
            #expect(refusals.count == 20 && refusals.allSatisfy { $0 == nil }, "\(refusals)")
            #expect(endpoint.fetches == 2)

            // The provider is down: the fetch an unknown kid starts fails, and the keys known
            // before still check their tokens.
            endpoint.serve(nil)
            try await Task.sleep(for: interval)
            #expect(await Self.refusal(es3, codec) == .unknownKey)
            #expect(endpoint.fetches == 3)
            #expect(await Self.refusal(es1, codec) == nil)
            #expect(await Self.refusal(es2, codec) == nil)
            #expect(ring.current.usableKeyIDs == ["es-1", "es-2"])

            // Back, with es-3: refused until the interval has passed since the failed fetch.
            endpoint.serve(witness.keySet(["es-1", "es-2", "es-3"]))
            #expect(await Self.refusal(es3, codec) == .unknownKey)
            #expect(endpoint.fetches == 3)
            try await Task.sleep(for: interval)
            #expect(await Self.refusal(es3, codec) == nil)
            #expect(endpoint.fetches == 4)
        }
    }

    @Test("a set older than its max age is read again in the background by the next new token: a key the provider revoked leaves it, and its cached tokens are refused")
    func staleSetReadAgain() async throws {
        let (es1, es2) = (try witness.token("es256"), try witness.token("es256_es2"))
        let endpoint = KeySetEndpoint()
        endpoint.serve(witness.keySet(["es-1", "es-2"]))
        try await endpoint.run { url in
            let maxAge: Duration = .seconds(2)
            let ring = JSONWebKeyring(source: .url(url), refreshInterval: .milliseconds(100), maxAge: maxAge, logger: .disabled)
            try await ring.start()
            let codec = JWTCodec(secret: TokenWitness.secret, keys: ring)
            #expect(await Self.refusal(es1, codec) == nil)  // now in the verified-token cache
            // es-1 is revoked at the provider; the set is fresh: a token naming a known key
            // starts no fetch.
            endpoint.serve(witness.keySet(["es-2"]))
            let uncached = JWTCodec(secret: TokenWitness.secret, keys: ring, cacheCapacity: 0)
            #expect(await Self.refusal(es2, uncached) == nil)
            #expect(endpoint.fetches == 1)
            try await Task.sleep(for: maxAge)
            // A token not verified before finds the set stale: it is answered from it, and
            // starts the fetch.
            #expect(await Self.refusal(es2, uncached) == nil)
            let read = await Integration.eventually(timeout: .seconds(10), every: .milliseconds(20)) {
                ring.current.usableKeyIDs == ["es-2"]
            }
            #expect(read && endpoint.fetches == 2)
            // es-1's token, accepted and cached before, is checked again under the new set.
            #expect(await Self.refusal(es1, codec) == .unknownKey)
        }
    }

    @Test("at start a URL that does not answer is logged and the service goes on; an unreadable file, a document that is no key set or a 404 stop it")
    func startFailures() async throws {
        let closed = JSONWebKeyring(source: .url("http://127.0.0.1:\(Integration.freePort())/jwks.json"), logger: .disabled)
        #expect(await Self.loadFailure(closed, atStart: true) == nil)
        #expect(closed.current.keyIDs.isEmpty)
        #expect(await Self.loadFailure(closed) == .unavailable)

        let missing = JSONWebKeyring(source: .file(NSTemporaryDirectory() + "no-such-jwks-\(UInt32.random(in: 0...UInt32.max)).json"),
                                     logger: .disabled)
        #expect(await Self.loadFailure(missing, atStart: true) == .unreadable)
        let path = try witness.keySetFile()
        try Data(#"{"issuer":"not a key set"}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(await Self.loadFailure(JSONWebKeyring(source: .file(path), logger: .disabled), atStart: true) == .invalid)

        let endpoint = KeySetEndpoint()
        try await endpoint.run { url in
            let wrongPath = JSONWebKeyring(source: .url(url + "-typo"), logger: .disabled)
            #expect(await Self.loadFailure(wrongPath, atStart: true) == .invalid)
            // Down at start (503): the service starts, and the set is read when the provider is back.
            let down = JSONWebKeyring(source: .url(url), logger: .disabled)
            #expect(await Self.loadFailure(down, atStart: true) == nil)
            endpoint.serve(witness.keySet(["es-1"]))
            #expect(await Self.loadFailure(down) == nil)
            #expect(down.current.usableKeyIDs == ["es-1"])
        }
    }
}
