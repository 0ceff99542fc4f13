// swift-tools-version: 6.0
// Zhixi Backbone — the server side of the reading app and CrowdRoom.
// Toolchain modules and Debian C libraries only: no package dependencies, ever.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// MARK: - C libraries (Debian bookworm -dev packages)

// `Shared/` by layer: `C` (module maps of Debian's C libraries), `Wrappers` (Swift over one C
// library or OS facility each), `Runtime` (a service process's lifecycle, settings, logging,
// routing and projections), `Domain` (the apps' contracts, auth, erasure, room scans) and `Dev`
// (what only `backbone dev`, tests and benchmarks link).

func system(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Shared/C/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let cLibraries: [Target] = [
    system("CRdKafka", pkgConfig: "rdkafka", apt: ["librdkafka-dev"]),
    system("CLibPQ", pkgConfig: "libpq", apt: ["libpq-dev"]),
    system("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: ["libmicrohttpd-dev"]),
    system("CWebSockets", pkgConfig: "libwebsockets", apt: ["libwebsockets-dev"]),
    system("COpenSSL", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
    system("CLZ4", pkgConfig: "liblz4", apt: ["liblz4-dev"]),
    system("CYAJL", pkgConfig: "yajl", apt: ["libyajl-dev"]),
    system("CCurl", pkgConfig: "libcurl", apt: ["libcurl4-openssl-dev"]),
    system("CPNG", pkgConfig: "libpng", apt: ["libpng-dev"]),
    system("CWebP", pkgConfig: "libwebp", apt: ["libwebp-dev"]),
    system("CArgon2", pkgConfig: "libargon2", apt: ["libargon2-dev"]),
    // glibc's own <malloc.h> (libc6-dev): no library of its own to link.
    .systemLibrary(name: "CMalloc", path: "Shared/C/CMalloc"),
]

// MARK: - Shared modules

let sharedLayers: [String: [String]] = [
    "Wrappers": ["BlockingCalls", "Hashing", "HTTPClient", "HTTPServer", "WebSocketServer", "Kafka", "Postgres", "ObjectStore", "USD", "JSONReader"],
    "Runtime": ["JSON", "ServiceLogging", "Settings", "Lifecycle", "HTTPRouting", "PrometheusMetrics", "ServiceRuntime", "Projection"],
    "Domain": ["Contracts", "Auth", "UserErasure", "RoomScan"],
    "Dev": ["DevInfrastructure", "DevAuth"],
]

func shared(_ name: String, _ deps: [Target.Dependency] = []) -> Target {
    let layer = sharedLayers.first { $0.value.contains(name) }!.key
    return .target(name: name, dependencies: deps, path: "Shared/\(layer)/\(name)", swiftSettings: swiftSettings)
}

let sharedModules: [Target] = [
    // JSON text in Swift alone: the one string escaper, the writer, `JSONValue`, number text.
    shared("JSON"),
    // yajl's token reader: the only module that imports yajl (internally: its clients see Swift
    // types only), kept apart from JSON so that the log lines and the lifecycle link no C library.
    shared("JSONReader", ["CYAJL"]),
    // The log lines (written with JSON's escaper) and their trace context.
    shared("ServiceLogging", ["JSON"]),
    // The lifecycle: services and their group, periodic tasks, coalescing, consumer groups, and
    // the `Duration` units every module converts with (so the wrappers that convert durations
    // for their C libraries, Kafka, Postgres and HTTPServer, depend on it: it depends on nothing
    // of theirs). A leaf with no C library, so that what needs only these does not link the host's.
    shared("Lifecycle", ["ServiceLogging"]),
    shared("BlockingCalls"),
    shared("HTTPRouting", ["ServiceLogging", "Lifecycle"]),
    shared("PrometheusMetrics"),
    shared("Hashing", ["COpenSSL"]),
    shared("HTTPClient", ["CCurl", "BlockingCalls"]),
    shared("Auth", ["Contracts", "Hashing", "HTTPClient", "ServiceLogging"]),
    shared("Kafka", ["CRdKafka", "ServiceLogging", "BlockingCalls", "Lifecycle"]),
    shared("Postgres", ["CLibPQ", "ServiceLogging", "BlockingCalls", "Lifecycle"]),
    shared("HTTPServer", ["CMicroHTTPD", "HTTPRouting", "ServiceLogging", "Lifecycle"]),
    shared("WebSocketServer", ["CWebSockets", "HTTPRouting", "ServiceLogging", "Lifecycle", "JSON"]),
    // Reading settings from the environment: a leaf, so that what links the object store (or any
    // module with settings) does not link the service runtime.
    shared("Settings", ["ServiceLogging"]),
    // The host: a service process's wiring of HTTP, auth, Kafka and PostgreSQL around the lifecycle.
    shared("ServiceRuntime", ["BlockingCalls", "CMalloc", "Lifecycle", "Settings", "ServiceLogging", "HTTPRouting", "HTTPServer", "PrometheusMetrics",
                              "Auth", "Kafka", "Postgres", "Projection"]),
    shared("Contracts", ["JSON", "JSONReader", "ServiceLogging"]),
    shared("Projection", ["Kafka", "Postgres", "ServiceLogging", "PrometheusMetrics", "Contracts", "Lifecycle"]),
    // Account deletion, in every service: the erasure consumer, its confirmations, the erased users.
    shared("UserErasure", ["Lifecycle", "Projection", "Kafka", "Postgres", "ServiceLogging", "Contracts", "Auth", "ServiceRuntime"]),
    shared("USD", ["CLZ4", "JSON"]),
    shared("ObjectStore", ["HTTPClient", "Hashing", "Settings", "Lifecycle"]),
    // Development only (embedded broker, private PostgreSQL, private SeaweedFS): linked by the
    // `backbone` CLI, tests and benchmarks, never by a service's library.
    shared("DevInfrastructure", ["CRdKafka", "Kafka", "Postgres", "ServiceLogging", "ObjectStore", "Hashing", "BlockingCalls"]),
    shared("RoomScan", ["USD", "Hashing", "Contracts", "CPNG", "CWebP", "JSON"]),
    // Development only: the `/auth/v1` API `backbone dev` hosts (compose runs Supabase's own auth
    // server). Linked by the `backbone` CLI and tests, never by a service's library.
    shared("DevAuth", ["CArgon2", "Hashing", "Auth", "HTTPRouting", "HTTPServer", "Postgres", "ServiceLogging", "Settings",
                       "ServiceRuntime", "UserErasure", "BlockingCalls"]),
]

// MARK: - Services: a library with the logic, a thin executable

func service(_ name: String, executable: String, _ deps: [Target.Dependency], mainDeps: [Target.Dependency] = []) -> [Target] {
    [
        .target(name: name, dependencies: deps, path: "Services/\(name)/Library", swiftSettings: swiftSettings),
        .executableTarget(name: "\(name)Main", dependencies: [.target(name: name), "ServiceRuntime"] + mainDeps,
                          path: "Services/\(name)/Main", swiftSettings: swiftSettings),
    ]
}

let serviceBase: [Target.Dependency] = [
    "Contracts", "Lifecycle", "ServiceRuntime", "Settings", "Kafka", "Postgres", "HTTPRouting", "Auth", "ServiceLogging", "UserErasure",
]

let services: [Target] =
    service("Ingest", executable: "ingest", serviceBase + ["Projection", "PrometheusMetrics", "ObjectStore", "BlockingCalls", "JSON"])
    + service("ProgressProjector", executable: "progress-projector", serviceBase + ["Projection"])
    + service("AnalyticsAggregator", executable: "analytics-aggregator", serviceBase + ["Projection", "HTTPClient", "Hashing"], mainDeps: ["Projection"])
    + service("RealtimeNotifier", executable: "realtime-notifier", serviceBase + ["Projection", "PrometheusMetrics", "WebSocketServer", "JSON", "JSONReader"],
              mainDeps: ["Projection"])
    + service("TranscodeWorker", executable: "transcode-worker", serviceBase + ["Projection", "PrometheusMetrics", "ObjectStore", "RoomScan", "Hashing", "JSON"])
    + [
        .target(
            name: "BackboneCLI",
            dependencies: [
                "Contracts", "Lifecycle", "ServiceRuntime", "Settings", "Kafka", "Postgres", "Auth", "ServiceLogging", "PrometheusMetrics", "HTTPServer", "Hashing",
                "Ingest", "ProgressProjector", "AnalyticsAggregator", "RealtimeNotifier", "TranscodeWorker", "USD", "Projection",
                "ObjectStore", "DevInfrastructure", "DevAuth", "UserErasure", "HTTPRouting", "JSON",
            ],
            path: "Services/Backbone/Library", swiftSettings: swiftSettings),
        .executableTarget(name: "BackboneMain", dependencies: ["BackboneCLI"],
                          path: "Services/Backbone/Main", swiftSettings: swiftSettings),
    ]

// MARK: - Benchmarks (swift run -c release <name>)

let benchmarks: [Target] = [
    .executableTarget(name: "ProgressBench", dependencies: ["Settings", "ProgressProjector", "Ingest", "Auth", "HTTPRouting", "Projection", "ServiceRuntime", "Contracts",
                                                            "Kafka", "Postgres", "ServiceLogging", "PrometheusMetrics", "DevInfrastructure", "Lifecycle"],
                      path: "Benchmarks/ProgressBench", swiftSettings: swiftSettings),
    .executableTarget(name: "CodecBench", dependencies: ["Contracts", "RealtimeNotifier"], path: "Benchmarks/CodecBench", swiftSettings: swiftSettings),
    .executableTarget(name: "KafkaBench", dependencies: ["Kafka", "CRdKafka", "DevInfrastructure", "ServiceLogging", "Lifecycle"], path: "Benchmarks/KafkaBench",
                      swiftSettings: swiftSettings),
    .systemLibrary(name: "CEpoll", path: "Benchmarks/RealtimeBench/CEpoll"),
    .executableTarget(name: "RealtimeBench",
                      dependencies: ["Contracts", "ServiceRuntime", "Kafka", "Postgres", "Auth", "ServiceLogging", "RealtimeNotifier", "CEpoll",
                                     "DevInfrastructure", "PrometheusMetrics", "JSON", "Lifecycle"],
                      path: "Benchmarks/RealtimeBench", exclude: ["load_client.py", "CEpoll"], swiftSettings: swiftSettings),
    .target(name: "BenchSupport", dependencies: ["Postgres", "ServiceLogging", "Lifecycle"], path: "Benchmarks/Support", swiftSettings: swiftSettings),
    .executableTarget(name: "PipelineBench", dependencies: ["BenchSupport", "RealtimeNotifier", "Auth", "Contracts", "Kafka", "Postgres", "ServiceLogging", "JSON"],
                      path: "Benchmarks/PipelineBench", swiftSettings: swiftSettings),
    .executableTarget(name: "IngestBench", dependencies: ["BenchSupport", "Ingest", "Lifecycle", "ServiceRuntime", "Contracts", "Kafka", "CRdKafka", "Postgres",
                                                          "HTTPServer", "Auth", "ServiceLogging", "PrometheusMetrics", "DevInfrastructure", "JSON"],
                      path: "Benchmarks/IngestBench", swiftSettings: swiftSettings),
    .executableTarget(name: "AnalyticsBench",
                      dependencies: ["AnalyticsAggregator", "Contracts", "Projection", "Postgres", "Kafka", "ServiceRuntime",
                                     "HTTPRouting", "Auth", "ServiceLogging", "PrometheusMetrics", "DevInfrastructure", "BenchSupport", "Lifecycle"],
                      path: "Benchmarks/AnalyticsBench", swiftSettings: swiftSettings),
    .executableTarget(name: "TranscodeBench", dependencies: ["RoomScan", "Lifecycle"], path: "Benchmarks/TranscodeBench",
                      swiftSettings: swiftSettings),
    .executableTarget(name: "RebuildBench",
                      dependencies: ["BackboneCLI", "ProgressProjector", "AnalyticsAggregator", "Projection", "Lifecycle", "ServiceRuntime", "Contracts",
                                     "Kafka", "Postgres", "HTTPRouting", "Auth", "ServiceLogging", "PrometheusMetrics", "DevInfrastructure"],
                      path: "Benchmarks/RebuildBench", swiftSettings: swiftSettings),
    .executableTarget(name: "FlowABench", dependencies: ["BackboneCLI", "Auth", "Contracts", "ServiceLogging", "RealtimeNotifier", "JSON", "Lifecycle"],
                      path: "Benchmarks/FlowABench",
                      swiftSettings: swiftSettings),
    .executableTarget(name: "CatalogBench",
                      dependencies: ["TranscodeWorker", "Contracts", "Projection", "Postgres", "ServiceRuntime", "HTTPServer", "HTTPRouting",
                                     "Auth", "ServiceLogging", "PrometheusMetrics", "ObjectStore", "BenchSupport", "Lifecycle"],
                      path: "Benchmarks/CatalogBench", swiftSettings: swiftSettings),
]

// MARK: - Tests

func tests(_ name: String, _ deps: [Target.Dependency], exclude: [String] = []) -> Target {
    .testTarget(name: name, dependencies: deps, path: "Tests/\(name)", exclude: exclude, swiftSettings: swiftSettings)
}

let testTargets: [Target] = [
    .target(name: "BackboneTestSupport", dependencies: ["Postgres", "Kafka", "ServiceLogging", "ObjectStore", "Hashing", "DevInfrastructure",
                                                       "Contracts", "Lifecycle", "PrometheusMetrics", "ServiceRuntime"], path: "Tests/Support",
            exclude: ["Witnesses"], swiftSettings: swiftSettings),
    tests("ProgressProjectorTests", ["ProgressProjector", "Ingest", "Projection", "UserErasure", "Contracts", "Kafka", "Postgres", "ServiceRuntime",
                                     "BackboneTestSupport", "Auth", "ServiceLogging", "PrometheusMetrics", "HTTPRouting", "DevInfrastructure", "JSON"]),
    // The effectively-once core's own (the projection runner's partition ownership, the rule
    // stored positions are checked by).
    tests("ProjectionTests", ["Projection", "Kafka", "DevInfrastructure"]),
    tests("FoundationModulesTests", ["Contracts", "Lifecycle", "Settings", "ServiceLogging", "HTTPRouting", "PrometheusMetrics", "Hashing", "Auth", "ServiceRuntime", "HTTPServer",
                                     "BackboneTestSupport", "Kafka", "DevInfrastructure", "JSON", "JSONReader"]),
    tests("KafkaTests", ["Kafka", "ServiceLogging", "DevInfrastructure", "BlockingCalls", "CRdKafka"]),
    tests("ObjectStoreTests", ["Settings", "ObjectStore", "ServiceRuntime", "DevInfrastructure", "BackboneTestSupport"]),
    tests("PostgresTests", ["Postgres", "ServiceLogging", "DevInfrastructure", "BackboneTestSupport"]),
    tests("HTTPServerTests", ["HTTPServer", "HTTPRouting", "ServiceLogging"]),
    tests("WebSocketServerTests", ["WebSocketServer", "HTTPRouting", "ServiceLogging"]),
    tests("ContractsTests", ["Contracts", "BackboneTestSupport", "JSON"], exclude: ["Fixtures"]),
    tests("USDTests", ["USD"], exclude: ["Fixtures"]),
    tests("RoomScanTests", ["RoomScan", "USD", "Contracts", "Hashing", "BackboneTestSupport"], exclude: ["Witnesses"]),
    tests("RealtimeNotifierTests", ["Contracts", "ServiceRuntime", "Kafka", "Postgres", "Auth", "ServiceLogging", "RealtimeNotifier", "Settings",
                                    "BackboneTestSupport", "DevInfrastructure", "PrometheusMetrics", "JSON"],
          exclude: ["Clients"]),
    tests("PipelineBenchTests", ["PipelineBench", "Contracts"]),
    tests("IngestTests", ["Lifecycle", "Settings", "Ingest", "Contracts", "ServiceRuntime", "Kafka", "Postgres", "HTTPServer", "HTTPRouting", "Auth",
                          "ServiceLogging", "PrometheusMetrics", "Hashing", "BackboneTestSupport", "DevInfrastructure", "ObjectStore", "Projection", "JSON"],
          exclude: ["Clients"]),
    tests("AnalyticsAggregatorTests", ["Settings",
        "AnalyticsAggregator", "Contracts", "Projection", "Postgres", "Kafka", "ServiceRuntime", "HTTPRouting", "Auth",
        "ServiceLogging", "BackboneTestSupport", "DevInfrastructure",
    ]),
    tests("TranscodeWorkerTests", ["Contracts", "Lifecycle", "ServiceRuntime", "Kafka", "Postgres", "HTTPRouting", "Auth", "ServiceLogging", "TranscodeWorker",
                                   "Projection", "ObjectStore", "Hashing", "BackboneTestSupport", "DevInfrastructure", "Ingest",
                                   "RealtimeNotifier", "HTTPServer", "PrometheusMetrics"],
          exclude: ["Clients", "Fixtures"]),
    // Outages and the fault suite: the service executables as child processes over a broker
    // and a PostgreSQL the tests take down and bring back.
    tests("FaultTests", ["BackboneTestSupport", "DevInfrastructure", "Kafka", "Postgres", "Contracts", "Auth", "ServiceLogging",
                         "ObjectStore", "Hashing", "Lifecycle"]),
    tests("BackboneCLITests", ["Lifecycle", "Settings", "BackboneCLI", "BackboneTestSupport", "Kafka", "Postgres", "Contracts", "Auth", "ServiceLogging",
                               "DevInfrastructure", "ProgressProjector", "Projection", "PrometheusMetrics", "ServiceRuntime",
                               "Ingest", "AnalyticsAggregator", "RealtimeNotifier", "TranscodeWorker", "ObjectStore", "HTTPRouting",
                               "Hashing", "DevAuth", "JSON"],
          exclude: ["Clients"]),
]

let package = Package(
    name: "ZhixiBackbone",
    products: [
        .executable(name: "backbone", targets: ["BackboneMain"]),
        .executable(name: "ingest", targets: ["IngestMain"]),
        .executable(name: "progress-projector", targets: ["ProgressProjectorMain"]),
        .executable(name: "analytics-aggregator", targets: ["AnalyticsAggregatorMain"]),
        .executable(name: "realtime-notifier", targets: ["RealtimeNotifierMain"]),
        .executable(name: "transcode-worker", targets: ["TranscodeWorkerMain"]),
        .executable(name: "kafka-bench", targets: ["KafkaBench"]),
        .executable(name: "codec-bench", targets: ["CodecBench"]),
        .executable(name: "realtime-bench", targets: ["RealtimeBench"]),
        .executable(name: "progress-bench", targets: ["ProgressBench"]),
        .executable(name: "analytics-bench", targets: ["AnalyticsBench"]),
        .executable(name: "transcode-bench", targets: ["TranscodeBench"]),
        .executable(name: "rebuild-bench", targets: ["RebuildBench"]),
        .executable(name: "flow-a-bench", targets: ["FlowABench"]),
        .executable(name: "catalog-bench", targets: ["CatalogBench"]),
        .executable(name: "pipeline-bench", targets: ["PipelineBench"]),
    ],
    targets: cLibraries + sharedModules + services + benchmarks + testTargets
)
