import Foundation

/// How results are printed: a table for a person at a terminal, JSON lines for a script
/// (stdout not a terminal, or `--json`).
enum CommandOutput {
    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    static func wantsJSON(_ args: CommandLineArguments) -> Bool { args.flag("json") || !isTerminal }

    /// Columns padded to their widest cell; trailing blanks trimmed.
    static func table(_ cells: [[String]]) -> String {
        guard let columns = cells.map(\.count).max() else { return "" }
        let widths = (0..<columns).map { column in cells.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return cells.map { line in
            line.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }.joined(separator: "\n") + "\n"
    }

    /// `--help`: prints the command's help (with its example) and tells the caller to stop.
    static func help(_ arguments: [String], _ text: String) -> Bool {
        guard arguments.contains("--help") || arguments.contains("-h") else { return false }
        print(text)
        return true
    }
}
