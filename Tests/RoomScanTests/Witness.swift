import BackboneTestSupport
import Foundation

/// The independent readers the tests check outputs with: Python (`PYTHON`, else the
/// worktree's `.venv`, else `python3` on the PATH) with trimesh and pygltflib, and Debian's
/// `gltfpack`, which parses and validates a GLB and exits non-zero on a broken one.
enum Witness {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Witnesses")

    static let python: String = {
        if let python = ProcessInfo.processInfo.environment["PYTHON"] { return python }
        let venv = root.appendingPathComponent(".venv/bin/python3").path
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : "python3"
    }()

    /// Whether Python can import every module of `modules`.
    static func hasPython(_ modules: [String]) -> Bool {
        (try? run(python, ["-c", "import " + modules.joined(separator: ", ")]).status) == 0
    }

    static let gltfpack: String? = ["/usr/bin/gltfpack", "/usr/local/bin/gltfpack"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs a program (looked up on the PATH unless absolute); its status and output.
    static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try Integration.run(program, arguments)
    }
}
