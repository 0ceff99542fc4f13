import BackboneTestSupport
import Foundation
import Testing

/// The production sources (`Shared/`, `Services/`), read as text.
enum ProductionSources {
    static let folders = ["Shared", "Services"]

    /// Every Swift file, by its path from the package root.
    static func files() throws -> [String: String] {
        let root = Integration.packageRoot
        var files: [String: String] = [:]
        for folder in folders {
            let base = root.appendingPathComponent(folder)
            guard let walk = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walk where url.pathExtension == "swift" {
                let path = String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1))
                files[path] = try String(contentsOf: url, encoding: .utf8)
            }
        }
        return files
    }

    /// The lines of `text` that match `pattern`, comments left out.
    static func lines(of text: String, matching pattern: String) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { line in
            let code = line.trimmingCharacters(in: .whitespaces)
            guard !code.hasPrefix("//") else { return false }
            return regex.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil
        }
    }
}

@Suite("Task ownership")
struct TaskOwnershipTests {
    /// An unstructured task: `Task {`, `Task(priority: …) {`, `Task.detached {`.
    static let unstructuredTask = #"\bTask(\.detached)?\s*(\{|\()"#

    /// The unstructured tasks production code may start, by file, each provably awaited by
    /// whoever started it. Anything else is started in a `TaskSet` its service waits for, or
    /// as a child task of a task group.
    static let allowed: [String: Int] = [
        // The set's own spawn: each task is kept until it ends and awaited by `waitForAll()`.
        "Shared/Runtime/Lifecycle/TaskSet.swift": 1,
        // One task per service, each awaited by the group's shutdown (up to its bound).
        "Shared/Runtime/Lifecycle/Service.swift": 1,
        // `Blocking.wait`: the poll thread blocks on a semaphore until the task ended.
        "Shared/Wrappers/Kafka/PollThread.swift": 2,
        // The reading of the key set again: kept in the ring's state, awaited by the token
        // checks that need it, and by `JSONWebKeyring.shutdown()`.
        "Shared/Domain/Auth/JSONWebKeyring.swift": 1,
        // The after-commit worker: awaited by `drained()`, which the runner calls before it returns.
        "Shared/Runtime/Projection/AfterCommitQueue.swift": 1,
        // The fetch ahead of the batch in hand: each awaited (its batch, or its end at the stop).
        "Shared/Runtime/Projection/ProjectionRunner.swift": 2,
        // The stage reporter beside the converter: awaited before the conversion returns.
        "Services/TranscodeWorker/Library/RoomScanConverter.swift": 1,
        // The client's socket reader: awaited by `close()`.
        "Services/RealtimeNotifier/Library/RealtimeClient.swift": 1,
        // The attached journal's pruning (awaited by `detach()`) and its last pass (awaited inline).
        "Services/Backbone/Library/Dev/DevBrokerJournal.swift": 2,
        // The drain at exit, awaited inline (run apart from the exit's cancellation).
        "Services/Backbone/Library/Dev/PipelineDrain.swift": 1,
        // A command's body in a task the signals cancel, awaited inline.
        "Services/Backbone/Library/Support/Interruptible.swift": 1,
        // The rebuild's next fetch, awaited (or cancelled and awaited) after the batch in hand.
        "Services/Backbone/Library/Rebuild/Rebuilder.swift": 1,
    ]

    @Test("production code starts no task that nobody waits for")
    func noUnownedTasks() throws {
        let files = try ProductionSources.files()
        #expect(files.count > 100, "the production sources were not found")
        var found: [String: [String]] = [:]
        for (path, text) in files {
            let spawns = try ProductionSources.lines(of: text, matching: Self.unstructuredTask)
            if !spawns.isEmpty { found[path] = spawns }
        }
        for (path, spawns) in found.sorted(by: { $0.key < $1.key }) where spawns.count > Self.allowed[path, default: 0] {
            Issue.record("""
                \(path) starts \(spawns.count) unstructured task(s), \(Self.allowed[path, default: 0]) allowed: \
                give each an owner (a TaskSet the service waits for, or a task group):
                \(spawns.joined(separator: "\n"))
                """)
        }
        // An entry that no longer matches anything is stale: it would let a new spawn in unseen.
        for (path, count) in Self.allowed where found[path]?.count != count {
            Issue.record("the allowance for \(path) (\(count)) no longer matches its \(found[path]?.count ?? 0) task(s)")
        }
    }
}
