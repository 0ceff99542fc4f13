/// A failure to read a USD package or layer: what went wrong (`code`), where (`context`).
public struct USDError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Extensible error code; compare with the static members.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file could not be opened or read from disk.
        public static let ioFailure = Code(rawValue: "io_failure")
        /// The input is not a zip archive, usda or usdc layer.
        public static let badMagic = Code(rawValue: "bad_magic")
        /// A declared offset or size points past the end of the data.
        public static let truncated = Code(rawValue: "truncated")
        /// The package cannot be read as a USDZ package (no readable root layer …).
        public static let invalidPackage = Code(rawValue: "invalid_package")
        /// A `.usda` layer has a syntax error.
        public static let syntax = Code(rawValue: "syntax_error")
        /// A `.usdc` crate layer is malformed.
        public static let corruptCrate = Code(rawValue: "corrupt_crate")
        /// A `.usdc` version this reader does not know.
        public static let unsupportedVersion = Code(rawValue: "unsupported_version")
        /// A declared size or count is over the reader's limits.
        public static let limitExceeded = Code(rawValue: "limit_exceeded")
        /// LZ4 or integer decompression failed.
        public static let decompression = Code(rawValue: "decompression_failed")
    }

    public let code: Code
    /// Where it happened: file, entry, byte offset or line.
    public let context: String
    public let message: String
    /// Validation findings gathered before the failure (e.g. why the root layer is unreadable).
    public var findings: [ValidationFinding] = []

    public init(_ code: Code, _ message: String, context: String = "", findings: [ValidationFinding] = []) {
        self.code = code
        self.message = message
        self.context = context
        self.findings = findings
    }

    /// Reading the same bytes again gives the same failure, except for I/O errors.
    public var isRetriable: Bool { code == .ioFailure }

    public var description: String {
        context.isEmpty ? "\(code): \(message)" : "\(code): \(message) (at \(context))"
    }

    /// The same error with an outer location prefixed to its context.
    func within(_ outer: String) -> USDError {
        USDError(code, message, context: context.isEmpty ? outer : "\(outer): \(context)", findings: findings)
    }
}
