@testable import DevInfrastructure
import Foundation
import Testing

@Suite("SeaweedFS start")
struct SeaweedFSServerTests {
    @Test("a weed that exits during start is reported by its panic line and its last lines, not by a goroutine dump alone")
    func exitReasonNamesThePanic() throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("weed-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let lines = ["I1203 15:01:02 mini.go:880 starting filer", "panic: listen tcp 127.0.0.1:41234: bind: address already in use", "",
                     "goroutine 87 [running]:"] + (1...8).map { "\tgithub.com/seaweedfs/seaweedfs/weed/command/mini.go:\(1500 + $0) +0x4c" }
        try lines.joined(separator: "\n").write(toFile: log, atomically: true, encoding: .utf8)
        let reason = SeaweedFSServer.exitReason(log: log)
        #expect(reason.hasPrefix("panic: listen tcp 127.0.0.1:41234: bind: address already in use\n"), "\(reason)")
        #expect(reason.split(separator: "\n").count == 6 && reason.hasSuffix("mini.go:1508 +0x4c"), "\(reason)")

        try "F1203 15:01:02.123 master.go:99 Master startup error\nexit".write(toFile: log, atomically: true, encoding: .utf8)
        #expect(SeaweedFSServer.exitReason(log: log) == "F1203 15:01:02.123 master.go:99 Master startup error\nexit")
        #expect(SeaweedFSServer.exitReason(log: log + ".missing") == "")
    }
}
