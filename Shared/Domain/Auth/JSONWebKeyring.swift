import Foundation
import HTTPClient
import ServiceLogging
import Synchronization

/// Where a key set is read from: `JWT_JWKS_FILE` or `JWT_JWKS_URL`.
public enum JSONWebKeySetSource: Sendable, Equatable, CustomStringConvertible {
    case file(String)
    case url(String)

    public var description: String {
        switch self {
        case .file(let path): path
        case .url(let url): url
        }
    }
}

/// The key set that ES256 and RS256 tokens are checked against, read at start and read
/// again when a token names a key the set does not hold (a key the provider added since).
///
/// Reading again is rate-limited: at most once per `refreshInterval` (a minute), however many
/// tokens name unknown keys, so a flood of made-up `kid`s costs one fetch a minute; the
/// requests that arrive while a fetch runs wait for that one. A set older than `maxAge` is
/// also read again, in the background, by the next token checked with it (one not in the
/// verified-token cache, whose hits stay a lookup), so that a key the provider revoked does
/// not stay in use for as long as no token names a new one. A fetch that
/// fails (the URL is down, the file half-written) leaves the last good set in use.
/// `generation` changes when a different set is installed, so that tokens verified under the
/// old one are checked again.
public final class JSONWebKeyring: Sendable {
    public let source: JSONWebKeySetSource
    public let refreshInterval: Duration
    public let maxAge: Duration
    private let logger: Logger
    private let state = Mutex(State())
    private let installed = Atomic<Int>(0)

    private struct State {
        var set = JSONWebKeySet.empty
        var lastAttempt: ContinuousClock.Instant?
        /// The fetch under way, which other requests join.
        var refresh: Task<Void, Never>?
    }

    /// How long a fetch from `JWT_JWKS_URL` may take.
    static let fetchTimeoutSeconds = 10

    /// `maxAge`: ten minutes, as long as Supabase's edge caches its JWKS.
    public init(source: JSONWebKeySetSource, refreshInterval: Duration = .seconds(60), maxAge: Duration = .seconds(600),
                logger: Logger) {
        self.source = source
        self.refreshInterval = refreshInterval
        self.maxAge = maxAge
        self.logger = logger
    }

    /// Increases each time a different set is installed.
    public var generation: Int { installed.load(ordering: .acquiring) }

    /// The set in use.
    public var current: JSONWebKeySet { state.withLock { $0.set } }

    /// Reads the set now (a service's start). Throws when it cannot: the ring then holds the
    /// set it had, and reads again when a token names an unknown key.
    public func load() async throws(KeySetError) {
        state.withLock { $0.lastAttempt = .now }
        install(try await read())
    }

    /// `load()` at a service's start: a file that cannot be read, or a document that is not a
    /// key set, is a configuration error and stops the start; a URL that does not answer is
    /// logged, and the service starts without the set (HS256 tokens still work) and reads it
    /// again when a token needs it, so an outage of the provider does not keep it down.
    public func start() async throws(KeySetError) {
        do {
            try await load()
        } catch let error where error.isRetriable {
            logger.error("the JWKS could not be fetched at start: ES256/RS256 tokens are refused until it is",
                         metadata: ["auth.jwks": source.description, "error": error.description])
        }
    }

    /// The key `kid` names for `algorithm`, and the generation of the set that holds it; a
    /// `kid` not in the set starts a fetch (if none ran within `refreshInterval`) and throws
    /// `unknownKey`. A set older than `maxAge` starts one too, without waiting for it.
    func key(_ kid: String, for algorithm: JWTAlgorithm) throws(AuthError) -> (key: JSONWebKeySet.Key, generation: Int) {
        let now = ContinuousClock.now
        let (found, generation, stale) = state.withLock { state in
            (state.set.key(kid, for: algorithm), installed.load(ordering: .relaxed),
             state.lastAttempt.map { now - $0 >= maxAge } ?? false)
        }
        guard let found else {
            refresh()
            throw AuthError(.unknownKey, "no key \(kid) in the key set")
        }
        if stale { refresh() }
        return (try found.get(), generation)
    }

    /// Starts reading the set again unless that was tried within `refreshInterval`; returns the
    /// fetch under way (to wait for), or nil when it is too soon.
    @discardableResult
    func refresh() -> Task<Void, Never>? {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let running = state.refresh { return running }
            if let last = state.lastAttempt, now - last < refreshInterval { return nil }
            state.lastAttempt = now
            // Created under the lock so that concurrent callers join this one; creating a task
            // only enqueues it, nothing of it runs here.
            let task = Task { await self.fetchAndInstall() }
            state.refresh = task
            return task
        }
    }

    /// Waits for a reading of the set still under way (a process stopping waits for it: the
    /// reading is bounded by the HTTP client's timeout).
    public func shutdown() async {
        await state.withLock { $0.refresh }?.value
    }

    private func fetchAndInstall() async {
        do {
            install(try await read())
        } catch {
            logger.warning("the JWKS could not be read again: the last good key set stays in use",
                           metadata: ["auth.jwks": source.description, "error": error.description])
        }
        state.withLock { $0.refresh = nil }
    }

    private func install(_ set: JSONWebKeySet) {
        let changed = state.withLock { state in
            guard state.set.fingerprint != set.fingerprint else { return false }
            state.set = set
            installed.wrappingAdd(1, ordering: .releasing)
            return true
        }
        guard changed else { return }
        logger.info("JWKS installed", metadata: ["auth.jwks": source.description, "auth.jwks_keys": set.keyIDs.joined(separator: ","),
                                                 "auth.jwks_usable": set.usableKeyIDs.joined(separator: ",")])
        for problem in set.ignored {
            logger.warning("JWKS key ignored: \(problem)", metadata: ["auth.jwks": source.description])
        }
    }

    private func read() async throws(KeySetError) -> JSONWebKeySet {
        let name = source.description
        switch source {
        case .file(let path):
            // A few kilobytes from a local file: not worth a thread of its own.
            guard let data = FileManager.default.contents(atPath: path) else {
                throw KeySetError(.unreadable, "the file cannot be read", source: name)
            }
            return try JSONWebKeySet(json: Array(data), source: name)
        case .url(let url):
            let answer: HTTPAnswer
            do {
                answer = try await CurlTransfer.perform(
                    HTTPExchange(method: "GET", url: url, headers: [("Accept", "application/json")], timeoutSeconds: Self.fetchTimeoutSeconds),
                    label: "auth.jwks")
            } catch {
                throw KeySetError(.unavailable, error.message, source: name)
            }
            switch answer.status {
            case 200: return try JSONWebKeySet(json: answer.body, source: name)
            case 429, 500...599: throw KeySetError(.unavailable, "the server answered \(answer.status)", source: name)
            default: throw KeySetError(.invalid, "the server answered \(answer.status)", source: name)
            }
        }
    }
}
