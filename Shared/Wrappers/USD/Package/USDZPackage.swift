import Foundation

/// A USDZ package (or a bare `.usda`/`.usdc` layer) read into memory, with its validation
/// findings. Entries that cannot be read are left out and reported; the rest is usable.
public struct USDZPackage: Sendable {
    /// One stored file inside the package.
    public struct Entry: Sendable, Equatable {
        public let path: String
        public let dataOffset: Int
        public let size: Int
        public let compressionMethod: UInt16
        /// Whether the bytes can be used (stored, inside the archive, safe path).
        public let readable: Bool
    }

    public static let layerExtensions: Set<String> = ["usda", "usdc", "usd"]
    public static let allowedExtensions: Set<String> = [
        "usda", "usdc", "usd", "png", "jpg", "jpeg", "exr", "avif", "m4a", "mp3", "wav",
    ]

    /// The whole file.
    public let bytes: [UInt8]
    /// Entries in archive order.
    public let entries: [Entry]
    public private(set) var findings: [ValidationFinding]
    /// The root layer's path inside the package.
    public let rootLayerPath: String

    /// Reads a package from disk.
    public init(contentsOf path: String, limits: PackageLimits = .default) throws {
        try self.init(bytes: try USDZPackage.readFile(path), name: (path as NSString).lastPathComponent, limits: limits)
    }

    /// Reads a package from bytes. A bare layer (`#usda` text or `PXR-USDC`) is accepted as a
    /// package of one entry named `name`.
    public init(bytes: [UInt8], name: String = "root.usda", limits: PackageLimits = .default) throws {
        self.bytes = bytes
        if bytes.starts(with: Array("PXR-USDC".utf8)) || bytes.starts(with: Array("#usda".utf8)) {
            let ext = bytes.starts(with: Array("#usda".utf8)) ? "usda" : "usdc"
            let base = name.split(separator: ".").dropLast().joined(separator: ".")
            let path = (base.isEmpty ? "root" : base) + "." + ext
            self.entries = [Entry(path: path, dataOffset: 0, size: bytes.count, compressionMethod: 0, readable: true)]
            self.findings = [ValidationFinding(.notAPackage, .info, "input is a bare \(ext) layer, not a USDZ package")]
            self.rootLayerPath = path
            return
        }
        guard bytes.starts(with: [0x50, 0x4B]) else {
            throw USDError(.badMagic, "not a zip archive, usda or usdc layer", context: "\(name) offset 0")
        }
        var findings: [ValidationFinding] = []
        let parsed = try ZipDirectory.read(bytes, limits: limits, findings: &findings)
        self.entries = parsed
        guard let first = parsed.first else {
            throw USDError(.invalidPackage, "the archive has no entries", context: name)
        }
        if !USDZPackage.layerExtensions.contains(USDZPackage.fileExtension(first.path)) {
            findings.append(ValidationFinding(.rootLayerNotFirst, .warning,
                                              "first entry '\(first.path)' is not a USD layer"))
        }
        guard let root = parsed.first(where: { USDZPackage.layerExtensions.contains(USDZPackage.fileExtension($0.path)) })
        else {
            throw USDError(.invalidPackage, "the archive holds no USD layer", context: name, findings: findings)
        }
        guard root.readable else {
            throw USDError(.invalidPackage, "the root layer '\(root.path)' cannot be read (compressed, encrypted or truncated)",
                           context: "\(name): \(root.path)", findings: findings)
        }
        self.rootLayerPath = root.path
        self.findings = findings
    }

    /// Reads a whole file straight into one byte array (no intermediate copy).
    static func readFile(_ path: String) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw USDError(.ioFailure, "cannot open file (errno \(errno))", context: path) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw USDError(.ioFailure, "cannot stat file", context: path) }
        let size = Int(info.st_size)
        return try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var done = 0
            while done < size {
                let got = read(descriptor, buffer.baseAddress! + done, size - done)
                if got < 0, errno == EINTR { continue }
                guard got > 0 else { throw USDError(.ioFailure, "short read at \(done) of \(size) bytes", context: path) }
                done += got
            }
            count = size
        }
    }

    static func fileExtension(_ path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return "" }
        return path[path.index(after: dot)...].lowercased()
    }

    /// The entry at a package path, if present and readable.
    public func entry(_ path: String) -> Entry? {
        entries.first { $0.path == path && $0.readable }
    }

    /// The bytes of a readable entry.
    public func data(of entry: Entry) -> ArraySlice<UInt8> {
        bytes[entry.dataOffset..<(entry.dataOffset + entry.size)]
    }

    mutating func addFinding(_ finding: ValidationFinding) {
        if !findings.contains(finding) { findings.append(finding) }
    }

    /// Resolves an asset path authored in `layerPath` to an entry path: relative to the layer's
    /// folder first, then package-root relative, then by file name (packagers rename folders).
    public func resolve(assetPath raw: String, from layerPath: String) -> String? {
        var asset = raw
        if let bracket = asset.firstIndex(of: "[") { // "pkg.usdz[inner/path]"
            asset = String(asset[asset.index(after: bracket)...].dropLast())
        }
        if asset.isEmpty { return nil }
        let folder = layerPath.split(separator: "/").dropLast().joined(separator: "/")
        var candidates: [String] = []
        if asset.hasPrefix("/") {
            candidates.append(String(asset.dropFirst()))
        } else {
            candidates.append(folder.isEmpty ? asset : folder + "/" + asset)
            candidates.append(asset)
        }
        for candidate in candidates {
            if let normal = USDZPackage.normalize(candidate), entry(normal) != nil { return normal }
        }
        let fileName = asset.split(separator: "/").last.map(String.init) ?? asset
        return entries.first { $0.readable && ($0.path as NSString).lastPathComponent == fileName }?.path
    }

    /// Collapses `.` and `..`; returns nil when the path climbs out of the package.
    static func normalize(_ path: String) -> String? {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                if parts.isEmpty { return nil }
                parts.removeLast()
            } else {
                parts.append(part)
            }
        }
        return parts.joined(separator: "/")
    }
}
