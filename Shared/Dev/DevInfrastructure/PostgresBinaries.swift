import Foundation
import Postgres

extension PostgresError.Code {
    /// The private cluster could not be initialised, started or stopped.
    public static let clusterFailed = PostgresError.Code("clusterFailed")
}

/// Paths of the server binaries: `$PG_BIN`, else `/usr/lib/postgresql/<highest>/bin`.
struct PostgresBinaries: Sendable {
    let directory: String
    var initdb: String { directory + "/initdb" }
    var pgCtl: String { directory + "/pg_ctl" }

    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(PostgresError) -> PostgresBinaries {
        if let explicit = environment["PG_BIN"], !explicit.isEmpty {
            return try validated(explicit)
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap { Int($0) }
            .sorted(by: >)
        for version in versions {
            let candidate = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: candidate + "/initdb") { return PostgresBinaries(directory: candidate) }
        }
        throw PostgresError(code: .clusterFailed, message: "no PostgreSQL server binaries under \(root) (set PG_BIN)")
    }

    private static func validated(_ directory: String) throws(PostgresError) -> PostgresBinaries {
        let binaries = PostgresBinaries(directory: directory)
        guard FileManager.default.isExecutableFile(atPath: binaries.initdb),
              FileManager.default.isExecutableFile(atPath: binaries.pgCtl) else {
            throw PostgresError(code: .clusterFailed, message: "PG_BIN has no initdb/pg_ctl", context: ["pg.bin": directory])
        }
        return binaries
    }
}
