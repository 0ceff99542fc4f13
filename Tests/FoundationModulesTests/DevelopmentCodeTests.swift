import Testing

@Suite("Development-only behaviour stays out of production modules")
struct DevelopmentCodeTests {
    /// Development-only code: the embedded infrastructure and auth (linked by the `backbone` CLI,
    /// tests and benchmarks, never by a service), and the `backbone` CLI itself, the dev host.
    static let developmentFolders = ["Shared/Dev/DevInfrastructure/", "Shared/Dev/DevAuth/", "Services/Backbone/"]

    @Test("no production module tests for the embedded broker: its quirks (the cluster identity) are injected by the dev stack")
    func noMockClusterInProduction() throws {
        let files = try ProductionSources.files()
        #expect(files.keys.contains { $0.hasPrefix("Shared/Dev/DevInfrastructure/") }, "the sources were not found")
        for (path, text) in files.sorted(by: { $0.key < $1.key })
        where !Self.developmentFolders.contains(where: path.hasPrefix) {
            let lines = try ProductionSources.lines(of: text, matching: "mockCluster")
            #expect(lines.isEmpty, "\(path) tests for librdkafka's mock cluster:\n\(lines.joined(separator: "\n"))")
        }
    }
}
