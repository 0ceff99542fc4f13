import BackboneTestSupport
import Foundation
import Testing

@Suite("Module boundaries")
struct ModuleBoundaryTests {
    /// yajl's token reader: the only module that may import yajl.
    static let jsonModule = "Shared/Wrappers/JSONReader/"
    static let serviceLogging = "Shared/Runtime/ServiceLogging/"
    /// The one set of `Duration` conversions.
    static let durationUnits = "Shared/Runtime/Lifecycle/Duration+Units.swift"

    @Test("only the JSON reader imports yajl, and the manifest gives it to no other module")
    func yajlStaysInTheJSONModule() throws {
        let files = try ProductionSources.files()
        #expect(files.keys.contains { $0.hasPrefix(Self.jsonModule) }, "the sources were not found")
        var importers: [String] = []
        for (path, text) in files.sorted(by: { $0.key < $1.key }) {
            if try !ProductionSources.lines(of: text, matching: #"^\s*(@_implementationOnly\s+|\w+\s+)?import\s+CYAJL\b"#).isEmpty {
                importers.append(path)
            }
        }
        #expect(!importers.isEmpty && importers.allSatisfy { $0.hasPrefix(Self.jsonModule) },
                "yajl is imported outside \(Self.jsonModule): \(importers.filter { !$0.hasPrefix(Self.jsonModule) })")

        let manifest = try String(contentsOf: Integration.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let users = try ProductionSources.lines(of: manifest, matching: #""CYAJL""#)
            .filter { !$0.contains("system(\"CYAJL\"") }
        #expect(users.count == 1 && users[0].contains("shared(\"JSONReader\""), "modules that depend on CYAJL:\n\(users.joined(separator: "\n"))")
    }

    /// Each shared module's dependencies as the manifest's `shared("Name", [...])` lines give them.
    static func sharedDependencies() throws -> [String: [String]] {
        let manifest = try String(contentsOf: Integration.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let line = try Regex(#"shared\("(\w+)"(?:,\s*\[([^\]]*)\])?\)"#)
        var graph: [String: [String]] = [:]
        for match in manifest.matches(of: line) {
            guard let name = match.output[1].substring else { continue }
            let list = match.output[2].substring.map(String.init) ?? ""
            graph[String(name)] = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines.union(["\""])) }
        }
        return graph
    }

    static func closure(of module: String, in graph: [String: [String]]) -> Set<String> {
        var seen: Set<String> = [], next = [module]
        while let name = next.popLast() {
            for dependency in graph[name] ?? [] where seen.insert(dependency).inserted { next.append(dependency) }
        }
        return seen
    }

    @Test("the lifecycle links no C library, and the projection core links neither the HTTP server nor the service host")
    func lifecycleAndProjectionStayLeaves() throws {
        let graph = try Self.sharedDependencies()
        let cModules = Set(try FileManager.default.contentsOfDirectory(atPath: Integration.packageRoot.appendingPathComponent("Shared/C").path))
        #expect(graph["Lifecycle"] != nil && graph["Projection"] != nil && !cModules.isEmpty, "the manifest's shared modules were not found")
        let lifecycle = Self.closure(of: "Lifecycle", in: graph)
        #expect(lifecycle.isDisjoint(with: cModules), "Lifecycle links \(lifecycle.intersection(cModules).sorted())")
        let projection = Self.closure(of: "Projection", in: graph)
        #expect(projection.isDisjoint(with: ["HTTPServer", "CMicroHTTPD", "ServiceRuntime", "WebSocketServer"]),
                "Projection links \(projection.sorted())")
    }

    @Test("ServiceLogging holds logging only: no JSON writing, no yajl, no Duration units")
    func serviceLoggingIsLoggingOnly() throws {
        let files = try ProductionSources.files().filter { $0.key.hasPrefix(Self.serviceLogging) }
        #expect(!files.isEmpty, "the sources were not found")
        let foreign = #"^\s*(public\s+|internal\s+|private\s+|fileprivate\s+)?(enum|struct|class|protocol|extension|typealias)\s+(JSON\w*|Duration)\b|yajl"#
        for (path, text) in files.sorted(by: { $0.key < $1.key }) {
            let lines = try ProductionSources.lines(of: text, matching: foreign)
            #expect(lines.isEmpty, "\(path) declares what is not logging:\n\(lines.joined(separator: "\n"))")
        }
    }

    @Test("Durations are converted by the one set of units in Lifecycle, never by hand from their components")
    func durationsConvertThroughTheOneSet() throws {
        let files = try ProductionSources.files()
        #expect(files.keys.contains(Self.durationUnits), "the sources were not found")
        for (path, text) in files.sorted(by: { $0.key < $1.key }) where path != Self.durationUnits {
            let lines = try ProductionSources.lines(of: text, matching: #"\bcomponents\.(seconds|attoseconds)\b|\battoseconds\b"#)
            #expect(lines.isEmpty, "\(path) converts a Duration by hand:\n\(lines.joined(separator: "\n"))")
        }
    }
}
