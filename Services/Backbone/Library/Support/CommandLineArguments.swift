import Foundation

/// `--name value`, `--flag` and positional arguments, with clear errors.
struct CommandLineArguments {
    private(set) var positional: [String] = []
    private var options: [String: String] = [:]
    private var flags: Set<String> = []

    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    /// `valued` names the options that take a value.
    init(_ arguments: [String], valued: Set<String>) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument.hasPrefix("--") {
                let parts = argument.dropFirst(2).split(separator: "=", maxSplits: 1).map(String.init)
                let name = parts[0]
                if valued.contains(name) {
                    guard let value = parts.count == 2 ? parts[1] : iterator.next() else {
                        throw UsageError(description: "--\(name) needs a value")
                    }
                    options[name] = value
                } else {
                    guard parts.count == 1 else { throw UsageError(description: "--\(name) takes no value") }
                    flags.insert(name)
                }
            } else {
                positional.append(argument)
            }
        }
    }

    func value(_ name: String) -> String? { options[name] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    func int(_ name: String) throws -> Int? {
        guard let text = options[name] else { return nil }
        guard let value = Int(text) else { throw UsageError(description: "--\(name) must be a whole number") }
        return value
    }

    /// Rejects flags the command does not know.
    func only(_ known: Set<String>) throws {
        let unknown = flags.union(options.keys).subtracting(known)
        if let first = unknown.sorted().first { throw UsageError(description: "unknown option --\(first)") }
    }
}
