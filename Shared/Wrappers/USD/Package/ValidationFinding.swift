/// One validation result about a package or layer, like Pixar's usdchecker reports.
public struct ValidationFinding: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable, Comparable {
        case info, warning, error
        public static func < (lhs: Severity, rhs: Severity) -> Bool {
            let order: [Severity] = [.info, .warning, .error]
            return order.firstIndex(of: lhs)! < order.firstIndex(of: rhs)!
        }
    }

    /// Stable machine-readable codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let compressedEntry = Code(rawValue: "compressed_entry")
        public static let encryptedEntry = Code(rawValue: "encrypted_entry")
        public static let misalignedData = Code(rawValue: "misaligned_data")
        public static let rootLayerNotFirst = Code(rawValue: "root_layer_not_first")
        public static let disallowedFileType = Code(rawValue: "disallowed_file_type")
        public static let pathTraversal = Code(rawValue: "path_traversal")
        public static let entryTooLarge = Code(rawValue: "entry_too_large")
        public static let packageTooLarge = Code(rawValue: "package_too_large")
        public static let truncatedArchive = Code(rawValue: "truncated_archive")
        public static let duplicateEntry = Code(rawValue: "duplicate_entry")
        public static let headerMismatch = Code(rawValue: "local_header_mismatch")
        public static let notAPackage = Code(rawValue: "not_a_package")
        public static let unreadableLayer = Code(rawValue: "unreadable_layer")
        public static let unresolvedAsset = Code(rawValue: "unresolved_asset")
        public static let unsupportedConstruct = Code(rawValue: "unsupported_construct")
        public static let compositionLimit = Code(rawValue: "composition_limit")
    }

    public let code: Code
    public let severity: Severity
    public let message: String

    public init(_ code: Code, _ severity: Severity, _ message: String) {
        self.code = code
        self.severity = severity
        self.message = message
    }

    public var description: String { "\(severity.rawValue) \(code): \(message)" }
}
