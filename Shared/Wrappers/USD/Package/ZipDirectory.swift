/// Reads a zip central directory and local headers (zip64 where needed) into package
/// entries, appending validation findings for everything that is unusual but readable.
enum ZipDirectory {
    static func read(_ bytes: [UInt8], limits: PackageLimits,
                     findings: inout [ValidationFinding]) throws -> [USDZPackage.Entry] {
        var reader = ByteReader(bytes, context: "zip")
        let eocd = try findEndOfCentralDirectory(bytes)
        var entryCount = Int(try reader.load(UInt16.self, at: eocd + 10))
        var directorySize = Int(try reader.load(UInt32.self, at: eocd + 12))
        var directoryOffset = Int(try reader.load(UInt32.self, at: eocd + 16))
        // zip64: locator just before the end record points at the zip64 end record.
        if eocd >= 20, try reader.load(UInt32.self, at: eocd - 20) == 0x0706_4B50 {
            let record = try reader.load(UInt64.self, at: eocd - 12)
            guard record < UInt64(bytes.count), try reader.load(UInt32.self, at: Int(record)) == 0x0606_4B50 else {
                throw truncated("zip64 end of central directory record missing", at: eocd - 20)
            }
            let base = Int(record)
            entryCount = try clampedInt(reader.load(UInt64.self, at: base + 32), at: base + 32)
            directorySize = try clampedInt(reader.load(UInt64.self, at: base + 40), at: base + 40)
            directoryOffset = try clampedInt(reader.load(UInt64.self, at: base + 48), at: base + 48)
        }
        guard directoryOffset <= bytes.count, directorySize <= bytes.count - directoryOffset else {
            findings.append(ValidationFinding(.truncatedArchive, .error,
                                              "central directory at \(directoryOffset) (+\(directorySize)) is past the end of the file (\(bytes.count) bytes)"))
            throw truncated("central directory outside the file", at: directoryOffset)
        }
        guard entryCount <= limits.maxEntries, entryCount <= directorySize / 46 + 1 else {
            throw USDError(.limitExceeded, "declared \(entryCount) entries", context: "zip offset \(eocd)")
        }
        var entries: [USDZPackage.Entry] = []
        entries.reserveCapacity(entryCount)
        var seen = Set<String>()
        var total = 0
        try reader.seek(directoryOffset)
        for index in 0..<entryCount {
            let at = reader.offset
            guard try reader.read(UInt32.self) == 0x0201_4B50 else {
                throw truncated("central directory entry \(index) has a bad signature", at: at)
            }
            try reader.skip(4)
            let flags = try reader.read(UInt16.self)
            let method = try reader.read(UInt16.self)
            try reader.skip(8)
            var compressedSize = UInt64(try reader.read(UInt32.self))
            var size = UInt64(try reader.read(UInt32.self))
            let nameLength = Int(try reader.read(UInt16.self))
            let extraLength = Int(try reader.read(UInt16.self))
            let commentLength = Int(try reader.read(UInt16.self))
            try reader.skip(8)
            var localOffset = UInt64(try reader.read(UInt32.self))
            let name = String(decoding: try reader.readBytes(nameLength), as: UTF8.self)
            var extra = ByteReader(bytes, start: reader.offset, end: reader.offset + extraLength, context: "zip extra")
            try reader.check(reader.offset, extraLength)
            while extra.remaining >= 4 {
                let tag = try extra.read(UInt16.self)
                let length = Int(try extra.read(UInt16.self))
                let fieldEnd = extra.offset + min(length, extra.remaining)
                if tag == 0x0001 {
                    if size == 0xFFFF_FFFF, extra.offset + 8 <= fieldEnd { size = try extra.read(UInt64.self) }
                    if compressedSize == 0xFFFF_FFFF, extra.offset + 8 <= fieldEnd { compressedSize = try extra.read(UInt64.self) }
                    if localOffset == 0xFFFF_FFFF, extra.offset + 8 <= fieldEnd { localOffset = try extra.read(UInt64.self) }
                }
                try extra.seek(fieldEnd)
            }
            try reader.skip(extraLength + commentLength)
            entries.append(try entry(name: name, flags: flags, method: method, size: size,
                                     compressedSize: compressedSize, localOffset: localOffset,
                                     bytes: bytes, limits: limits, seen: &seen, total: &total, findings: &findings))
        }
        return entries
    }

    private static func entry(name: String, flags: UInt16, method: UInt16, size: UInt64, compressedSize: UInt64,
                              localOffset: UInt64, bytes: [UInt8], limits: PackageLimits,
                              seen: inout Set<String>, total: inout Int,
                              findings: inout [ValidationFinding]) throws -> USDZPackage.Entry {
        var readable = true
        func unreadable(_ finding: ValidationFinding) {
            findings.append(finding)
            readable = false
        }
        let reader = ByteReader(bytes, context: "zip entry '\(name)'")
        if name.hasPrefix("/") || name.split(separator: "/").contains("..") || name.contains("\\") {
            unreadable(ValidationFinding(.pathTraversal, .error, "entry '\(name)' escapes the package root"))
        }
        if !seen.insert(name).inserted {
            findings.append(ValidationFinding(.duplicateEntry, .warning, "entry '\(name)' appears more than once"))
        }
        let ext = USDZPackage.fileExtension(name)
        if !name.hasSuffix("/"), !USDZPackage.allowedExtensions.contains(ext) {
            findings.append(ValidationFinding(.disallowedFileType, .warning, "entry '\(name)' has a file type USDZ does not allow"))
        }
        if flags & 1 != 0 {
            unreadable(ValidationFinding(.encryptedEntry, .error, "entry '\(name)' is encrypted"))
        }
        if method != 0 {
            unreadable(ValidationFinding(.compressedEntry, .error, "entry '\(name)' is compressed (method \(method)); USDZ entries must be stored"))
        }
        if size > UInt64(limits.maxEntrySize) || compressedSize > UInt64(limits.maxEntrySize) {
            unreadable(ValidationFinding(.entryTooLarge, .error, "entry '\(name)' declares \(max(size, compressedSize)) bytes, over the \(limits.maxEntrySize)-byte limit"))
        } else {
            total += Int(size)
            if total > limits.maxTotalSize {
                unreadable(ValidationFinding(.packageTooLarge, .error, "entries add up past the \(limits.maxTotalSize)-byte limit at '\(name)'"))
            }
        }
        var dataOffset = 0
        if localOffset > UInt64(bytes.count) - min(UInt64(bytes.count), 30)
            || (try? reader.load(UInt32.self, at: Int(localOffset))) != 0x0403_4B50 {
            unreadable(ValidationFinding(.truncatedArchive, .error, "entry '\(name)' local header at \(localOffset) is missing or past the end"))
        } else {
            let local = Int(localOffset)
            let nameLength = Int(try reader.load(UInt16.self, at: local + 26))
            let extraLength = Int(try reader.load(UInt16.self, at: local + 28))
            dataOffset = local + 30 + nameLength + extraLength
            if dataOffset > bytes.count || UInt64(bytes.count - dataOffset) < (method == 0 ? size : compressedSize) {
                unreadable(ValidationFinding(.truncatedArchive, .error, "entry '\(name)' data (\(size) bytes at \(dataOffset)) runs past the end of the file"))
            } else if method == 0, size != compressedSize {
                unreadable(ValidationFinding(.headerMismatch, .error, "stored entry '\(name)' has different compressed and plain sizes"))
            }
            if readable, dataOffset % 64 != 0 {
                findings.append(ValidationFinding(.misalignedData, .warning, "entry '\(name)' data starts at \(dataOffset), not on a 64-byte boundary"))
            }
        }
        return USDZPackage.Entry(path: name, dataOffset: readable ? dataOffset : 0, size: readable ? Int(size) : 0,
                                 compressionMethod: method, readable: readable)
    }

    private static func findEndOfCentralDirectory(_ bytes: [UInt8]) throws -> Int {
        guard bytes.count >= 22 else { throw truncated("file too short for a zip end record", at: 0) }
        var position = bytes.count - 22
        let lowest = max(0, bytes.count - 22 - 65_535)
        while position >= lowest {
            if bytes[position] == 0x50, bytes[position + 1] == 0x4B, bytes[position + 2] == 0x05, bytes[position + 3] == 0x06 {
                return position
            }
            position -= 1
        }
        throw truncated("no end of central directory record (truncated archive?)", at: bytes.count)
    }

    private static func clampedInt(_ value: UInt64, at: Int) throws -> Int {
        guard value <= UInt64(Int32.max) * 16 else { throw USDError(.limitExceeded, "zip64 value \(value) is absurd", context: "zip offset \(at)") }
        return Int(value)
    }

    private static func truncated(_ message: String, at offset: Int) -> USDError {
        USDError(.truncated, message, context: "zip offset \(offset)")
    }
}
