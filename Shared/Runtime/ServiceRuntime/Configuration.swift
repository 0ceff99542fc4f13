import Auth
import Foundation
import HTTPRouting
import Kafka
import Lifecycle
import ServiceLogging
import Settings

/// The settings every service reads: where Kafka and Postgres are, how tokens are verified
/// and the HTTP port.
public struct CommonConfiguration: Sendable {
    public var kafkaBrokers: String
    public var databaseURL: String
    public var jwtSecret: String
    public var httpHost: String
    public var httpPort: Int
    public var logLevel: Logger.Level
    /// Maximum database connections of this process.
    public var databasePoolSize: Int
    /// How long SIGTERM waits for the services to stop before the process exits anyway.
    public var shutdownTimeout: Duration
    /// The account-deletion topics every service consumes and confirms on.
    public var userDeletionsTopic: String = "user.deletions.v1"
    public var userDeletionStatusTopic: String = "user.deletions.status.v1"
    /// Origins whose browser apps may call the API (`*`: any; the routes all need a token,
    /// and none uses cookies).
    public var corsAllowedOrigins: [String] = ["*"]
    /// What tokens are checked with besides `jwtSecret` (a Supabase project's JWKS).
    public var tokenVerification = TokenVerificationSettings()
    /// How long a consumer's fetch waits on a quiet partition (`fetch.wait.max.ms`,
    /// `KAFKA_FETCH_WAIT_MS`). nil: librdkafka's 500 ms, right for a Kafka broker, which answers
    /// a waiting fetch as soon as a record arrives. `backbone dev` sets 20 ms: its embedded
    /// broker waits the whole time, which would make every read model trail by half a second.
    public var kafkaFetchWait: Duration?
    /// What the projections' stored positions are bound to (`KAFKA_CLUSTER_IDENTITY`): the id
    /// the cluster reports (the default), or, set by the dev stack for its embedded broker, the
    /// id and the bootstrap servers.
    public var kafkaClusterIdentity: KafkaClusterIdentity = .clusterID
    /// The share of requests that bring no `traceparent` whose new trace is sampled, so logged
    /// by every service it reaches (`TRACE_SAMPLE_RATIO`, 0…1; default 0: a caller asks for a
    /// logged trace by sending a sampled `traceparent`, see docs/operations.md).
    public var traceSampleRatio: Double = 0

    /// The librdkafka properties of the consumers started with this configuration.
    public var kafkaConsumerProperties: [String: String] { Self.consumerProperties(fetchWait: kafkaFetchWait) }

    /// The librdkafka consumer properties for a fetch wait (none for librdkafka's default).
    public static func consumerProperties(fetchWait: Duration?) -> [String: String] {
        fetchWait.map { ["fetch.wait.max.ms": String($0.wholeMilliseconds)] } ?? [:]
    }

    public init(kafkaBrokers: String, databaseURL: String, jwtSecret: String, httpHost: String = "0.0.0.0",
                httpPort: Int, logLevel: Logger.Level = .info, databasePoolSize: Int = 10, shutdownTimeout: Duration = .seconds(10),
                kafkaFetchWait: Duration? = nil, kafkaClusterIdentity: KafkaClusterIdentity = .clusterID) {
        self.kafkaFetchWait = kafkaFetchWait
        self.kafkaClusterIdentity = kafkaClusterIdentity
        self.kafkaBrokers = kafkaBrokers
        self.databaseURL = databaseURL
        self.jwtSecret = jwtSecret
        self.httpHost = httpHost
        self.httpPort = httpPort
        self.logLevel = logLevel
        self.databasePoolSize = databasePoolSize
        self.shutdownTimeout = shutdownTimeout
    }

    /// Reads `KAFKA_BROKERS`, `DATABASE_URL`, `JWT_SECRET`, `HTTP_HOST`, `HTTP_PORT`,
    /// `LOG_LEVEL`, `DATABASE_POOL_SIZE`, `SHUTDOWN_TIMEOUT_SECONDS`, `USER_DELETIONS_TOPIC`,
    /// `USER_DELETION_STATUS_TOPIC`, `CORS_ALLOWED_ORIGINS`, `KAFKA_FETCH_WAIT_MS`,
    /// `KAFKA_CLUSTER_IDENTITY`, `TRACE_SAMPLE_RATIO` and the token settings (`TokenVerificationSettings.read`) into
    /// `reader` (problems are collected there).
    public static func read(from reader: inout EnvironmentReader, defaultPort: Int) -> CommonConfiguration {
        let brokers = reader.string("KAFKA_BROKERS")
        let database = reader.string("DATABASE_URL")
        let secret = reader.string("JWT_SECRET")
        if !secret.isEmpty && secret.utf8.count < 16 {
            reader.fail("JWT_SECRET must be at least 16 bytes")
        }
        var configuration = CommonConfiguration(
            kafkaBrokers: brokers, databaseURL: database, jwtSecret: secret,
            httpHost: reader.string("HTTP_HOST", default: "0.0.0.0"),
            httpPort: reader.int("HTTP_PORT", default: defaultPort, range: 0...65535),
            logLevel: reader.logLevel(),
            databasePoolSize: reader.int("DATABASE_POOL_SIZE", default: 10, range: 1...200),
            shutdownTimeout: .seconds(reader.int("SHUTDOWN_TIMEOUT_SECONDS", default: 10, range: 1...600)))
        configuration.userDeletionsTopic = reader.string("USER_DELETIONS_TOPIC", default: configuration.userDeletionsTopic)
        configuration.userDeletionStatusTopic = reader.string("USER_DELETION_STATUS_TOPIC",
                                                              default: configuration.userDeletionStatusTopic)
        configuration.corsAllowedOrigins = readCORSAllowedOrigins(from: &reader)
        configuration.tokenVerification = TokenVerificationSettings.read(from: &reader)
        configuration.kafkaFetchWait = reader.optionalMilliseconds("KAFKA_FETCH_WAIT_MS", range: 0...300_000)
        configuration.traceSampleRatio = readTraceSampleRatio(from: &reader)
        configuration.kafkaClusterIdentity = reader.choice("KAFKA_CLUSTER_IDENTITY", default: .clusterID)
        return configuration
    }
}

extension CommonConfiguration {
    /// Reads `TRACE_SAMPLE_RATIO` (every service, and `backbone dev` for the services it runs):
    /// 0…1, default 0.
    public static func readTraceSampleRatio(from reader: inout EnvironmentReader) -> Double {
        reader.double("TRACE_SAMPLE_RATIO", default: 0, range: 0...1)
    }

    /// Reads `CORS_ALLOWED_ORIGINS` (every service, and `backbone dev` for the services it
    /// runs): `*`, any origin (the default), or a comma-separated list of origins as a browser
    /// sends them in `Origin` — `scheme://host[:port]`, without path or trailing slash. A value
    /// that no browser would send (`remix.example.com`, `https://remix.example.com/`) would
    /// silently match nothing: it is refused, named.
    public static func readCORSAllowedOrigins(from reader: inout EnvironmentReader) -> [String] {
        let origins = reader.list("CORS_ALLOWED_ORIGINS") ?? ["*"]
        if origins.isEmpty {
            reader.fail("CORS_ALLOWED_ORIGINS must name at least one origin (or *)")
            return ["*"]
        }
        let invalid = origins.filter { $0 != "*" && !CORSPolicy.isOrigin($0) }
        if !invalid.isEmpty {
            reader.fail("CORS_ALLOWED_ORIGINS: \(invalid.map { "\"\($0)\"" }.joined(separator: ", ")) "
                        + (invalid.count == 1 ? "is not an origin" : "are not origins")
                        + "; write each as a browser sends it, scheme://host[:port] (https://remix.example.com), or *")
        }
        return origins
    }
}

/// What tokens are checked with besides `JWT_SECRET`: the public keys of ES256/RS256 tokens
/// and the issuer and audience of user tokens (a Supabase project's, see docs/auth.md).
public struct TokenVerificationSettings: Sendable, Equatable {
    /// `JWT_JWKS_FILE` or `JWT_JWKS_URL`; nil: HS256 tokens only.
    public var keySet: JSONWebKeySetSource?
    /// `JWT_ISSUER`: the `iss` user tokens must have; nil: not checked.
    public var issuer: String?
    /// `JWT_AUDIENCE`: the `aud` user tokens must include (Supabase: `authenticated`); nil: not checked.
    public var audience: String?

    public init(keySet: JSONWebKeySetSource? = nil, issuer: String? = nil, audience: String? = nil) {
        self.keySet = keySet
        self.issuer = issuer
        self.audience = audience
    }

    /// Reads `JWT_JWKS_FILE` or `JWT_JWKS_URL`, `JWT_ISSUER` and `JWT_AUDIENCE` (every service,
    /// and `backbone dev` for the services it runs).
    public static func read(from reader: inout EnvironmentReader) -> TokenVerificationSettings {
        var settings = TokenVerificationSettings(issuer: reader.optionalString("JWT_ISSUER"),
                                                 audience: reader.optionalString("JWT_AUDIENCE"))
        switch (reader.optionalString("JWT_JWKS_FILE"), reader.optionalString("JWT_JWKS_URL")) {
        case (let file?, nil):
            settings.keySet = .file(file)
        case (nil, let url?):
            // libcurl would also take ftp://, file://…: a key set comes over HTTP(S) only.
            if url.hasPrefix("https://") || url.hasPrefix("http://") {
                settings.keySet = .url(url)
            } else {
                reader.fail("JWT_JWKS_URL must be an http(s) URL (got \"\(url)\")")
            }
        case (_?, _?):
            reader.fail("set JWT_JWKS_FILE or JWT_JWKS_URL, not both")
        case (nil, nil):
            break
        }
        return settings
    }
}
