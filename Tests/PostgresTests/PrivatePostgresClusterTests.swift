import DevInfrastructure
import BackboneTestSupport
import Foundation
import Postgres
import ServiceLogging
import Testing

@Suite("PrivatePostgresCluster", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(3)))
struct PrivatePostgresClusterTests {
    @Test("a private cluster starts on a free port, serves queries, survives restart and a stale pid file, and stops")
    func lifecycle() async throws {
        let directory = "/tmp/" + TestPostgres.uniqueName("pgcluster")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cluster = PrivatePostgresCluster(directory: directory, logger: .disabled)

        let url = try await cluster.start()
        #expect(url.hasPrefix("postgres://postgres@127.0.0.1:"))
        #expect(url.hasSuffix("/backbone"))
        let port = try #require(cluster.port)
        let client = TestPostgres.client(maxConnections: 1, url: url)
        #expect(try await client.query("SELECT current_database() AS db")[0].decode(String.self, "db") == "backbone")
        let listen = try await client.query("SELECT current_setting('listen_addresses') AS a")[0].decode(String.self, "a")
        #expect(listen == "127.0.0.1")
        try await client.execute("CREATE TABLE survives (id int)")
        await client.close()
        await cluster.stop()
        #expect(!FileManager.default.fileExists(atPath: cluster.dataDirectory + "/postmaster.pid"))

        // A crash leaves a postmaster.pid whose process is gone; start must cope.
        try "999999\n\(cluster.dataDirectory)\n0\n\(port)\n".write(
            toFile: cluster.dataDirectory + "/postmaster.pid", atomically: true, encoding: .utf8)
        let again = PrivatePostgresCluster(directory: directory, port: port, logger: .disabled)
        let secondURL = try await again.start()
        #expect(secondURL == url)
        let reopened = TestPostgres.client(maxConnections: 1, url: secondURL)
        #expect(try await reopened.query("SELECT count(*) AS n FROM survives")[0].decode(Int64.self, "n") == 0)
        await reopened.close()
        await again.stop()
        let afterStop = TestPostgres.client(maxConnections: 1, url: secondURL)
        #expect(await afterStop.ping() == false)
        await afterStop.close()
    }

    @Test("as root, a cluster asked for inside a folder the postgres user cannot traverse lives under /var/tmp and keeps its data across restarts",
          .enabled(if: geteuid() == 0))
    func unreachableDirectoryAsRoot() async throws {
        let home = "/tmp/" + TestPostgres.uniqueName("pgprivate")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let directory = home + "/clone/.backbone/postgres"
        #expect(!PrivatePostgresCluster.reachableByOthers(directory))
        let cluster = PrivatePostgresCluster(directory: directory, logger: .disabled)
        #expect(cluster.clusterDirectory.hasPrefix("/var/tmp/backbone-postgres-"))
        defer {
            try? FileManager.default.removeItem(atPath: home)
            try? FileManager.default.removeItem(atPath: cluster.clusterDirectory)
        }
        let url = try await cluster.start()
        let client = TestPostgres.client(maxConnections: 1, url: url)
        _ = try await client.execute("CREATE TABLE survives (id int)")
        await client.close()
        await cluster.stop()

        let again = PrivatePostgresCluster(directory: directory, logger: .disabled)
        #expect(again.clusterDirectory == cluster.clusterDirectory)
        let second = TestPostgres.client(maxConnections: 1, url: try await again.start())
        #expect(try await second.query("SELECT count(*)::bigint AS n FROM survives")[0].decode(Int64.self, "n") == 0)
        await second.close()
        await again.stop()

        // The folder deleted and cloned again at the same path: a new, empty cluster.
        try FileManager.default.removeItem(atPath: home + "/clone")
        let reclone = PrivatePostgresCluster(directory: directory, logger: .disabled)
        defer { try? FileManager.default.removeItem(atPath: reclone.clusterDirectory) }
        #expect(reclone.clusterDirectory != cluster.clusterDirectory && reclone.clusterDirectory.hasPrefix("/var/tmp/backbone-postgres-"))
        let fresh = TestPostgres.client(maxConnections: 1, url: try await reclone.start())
        let tables = try await fresh.query("SELECT count(*)::bigint AS n FROM pg_tables WHERE tablename = 'survives'")
        #expect(try tables[0].decode(Int64.self, "n") == 0, "the deleted folder's data is not there")
        await fresh.close()
        await reclone.stop()
    }
}
