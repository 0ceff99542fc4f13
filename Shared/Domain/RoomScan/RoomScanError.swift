/// Why a room scan cannot be transcoded: a code a program can branch on and a reason a
/// person can act on ("walls[2].transform: expected 16 numbers, found 12").
public struct RoomScanError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Extensible failure codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// `roomplan.json` cannot be read or is not the JSON of a CapturedRoom.
        public static let roomPlanMalformed = Code(rawValue: "roomplan_malformed")
        /// `roomplan.json` is well-formed but beyond what a room can hold (element counts, size).
        public static let roomPlanTooLarge = Code(rawValue: "roomplan_too_large")
        /// A mesh whose counts and indices do not fit together, or beyond what a layer may hold.
        public static let geometryInvalid = Code(rawValue: "geometry_invalid")
        /// `source.usdz` is not a readable USDZ package (the reason says what the reader met).
        public static let packageInvalid = Code(rawValue: "package_invalid")
        /// `source.usdz` does not have the sha256 the upload declared.
        public static let checksumMismatch = Code(rawValue: "checksum_mismatch")
        /// roomId or versionId cannot name a store key.
        public static let metadataInvalid = Code(rawValue: "metadata_invalid")
        /// The output directory could not be written (the machine's fault, not the input's).
        public static let outputFailed = Code(rawValue: "output_failed")
        /// libpng or libwebp refused to encode a thumbnail.
        public static let encodingFailed = Code(rawValue: "encoding_failed")
    }

    public let code: Code
    public let reason: String
    /// Input problems are never retriable (the same bytes fail the same way); a local
    /// disk failure is.
    public var isRetriable: Bool { code == .outputFailed }

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }
}
