import Foundation

/// base64url without padding (RFC 4648 §5), as JWTs use it.
public enum Base64URL {
    /// Foundation's base64 with its two symbols swapped and its padding left off, in one pass
    /// over the bytes (three `replacingOccurrences` through `NSString` were 7 % of a history
    /// page's CPU, which hands out a cursor).
    public static func encode(_ bytes: [UInt8]) -> String {
        let standard = Data(bytes).base64EncodedData()
        return String(unsafeUninitializedCapacity: standard.count) { buffer in
            var count = 0
            for c in standard where c != 0x3D {  // =
                buffer[count] = c == 0x2B ? 0x2D : c == 0x2F ? 0x5F : c  // + → -, / → _
                count += 1
            }
            return count
        }
    }

    /// Decodes; `nil` on any character outside the alphabet or an impossible length.
    public static func decode(_ string: Substring) -> [UInt8]? {
        // The alphabet check and the mapping to standard base64 in one pass over the bytes.
        var standard: [UInt8] = []
        standard.reserveCapacity(string.utf8.count + 2)
        for c in string.utf8 {
            switch c {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39: standard.append(c)
            case 0x2D: standard.append(0x2B)  // - → +
            case 0x5F: standard.append(0x2F)  // _ → /
            default: return nil
            }
        }
        switch standard.count % 4 {
        case 0: break
        case 2: standard.append(contentsOf: [0x3D, 0x3D])
        case 3: standard.append(0x3D)
        default: return nil
        }
        return Data(base64Encoded: Data(standard)).map { Array($0) }
    }
}
