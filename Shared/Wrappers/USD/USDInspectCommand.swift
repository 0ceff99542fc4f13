import Foundation

/// `backbone usd inspect FILE.usdz [--json]`: validates a package and prints its prims.
public enum USDInspectCommand {
    static let usage = "usage: backbone usd inspect FILE.usdz [--json]"

    /// Runs the command with the arguments after `usd`; returns the process exit code:
    /// 0 read (warnings allowed), 1 read with error findings or unreadable, 2 usage.
    public static func run(arguments: [String]) -> Int32 {
        guard arguments.first == "inspect" else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 2
        }
        let rest = arguments.dropFirst()
        let json = rest.contains("--json")
        let files = rest.filter { !$0.hasPrefix("--") }
        guard files.count == 1, let file = files.first else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 2
        }
        guard json else {
            let report = inspect(path: file)
            FileHandle.standardOutput.write(Data(report.text.utf8))
            return report.hasErrors ? 1 : 0
        }
        var buffer = ""
        let hasErrors = writeJSON(path: file) { piece in
            buffer += piece
            if buffer.utf8.count >= 1 << 16 {
                FileHandle.standardOutput.write(Data(buffer.utf8))
                buffer = ""
            }
        }
        FileHandle.standardOutput.write(Data((buffer + "\n").utf8))
        return hasErrors ? 1 : 0
    }

    /// Streams the JSON report of `inspect(path:)` without keeping a report per prim;
    /// returns whether it has error findings.
    public static func writeJSON(path: String, _ emit: (String) -> Void) -> Bool {
        let failure: InspectReport
        do {
            let package = try USDZPackage(contentsOf: path)
            do {
                return InspectReport.writeJSON(stage: try USDStage(package: package), emit)
            } catch let error as USDError {
                failure = InspectReport(failure: error, findings: package.findings)
            }
        } catch let error as USDError {
            failure = InspectReport(failure: error)
        } catch {
            failure = InspectReport(failure: USDError(.ioFailure, "\(error)", context: path))
        }
        failure.writeJSON(emit)
        return failure.hasErrors
    }

    /// Reads, composes and reports on a package; never throws: failures become findings.
    public static func inspect(path: String) -> InspectReport {
        do {
            let package = try USDZPackage(contentsOf: path)
            do {
                return InspectReport(stage: try USDStage(package: package))
            } catch let error as USDError {
                return InspectReport(failure: error, findings: package.findings)
            }
        } catch let error as USDError {
            return InspectReport(failure: error)
        } catch {
            return InspectReport(failure: USDError(.ioFailure, "\(error)", context: path))
        }
    }
}
