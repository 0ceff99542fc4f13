/// `backbone usd inspect FILE.usdz [--json]` — placeholder until the USD reader lands.
public enum USDInspectCommand {
    /// Runs the command with the arguments after `usd`; returns the process exit code.
    public static func run(arguments: [String]) -> Int32 {
        print("usd: not built yet")
        return 1
    }
}
