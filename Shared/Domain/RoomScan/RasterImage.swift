import CPNG
import CWebP

/// An 8-bit RGB image drawn by the plan thumbnail, encoded by libpng and libwebp.
public struct RasterImage: Sendable {
    public let width: Int
    public let height: Int
    /// Rows top to bottom, three bytes a pixel.
    public private(set) var pixels: [UInt8]

    public init(width: Int, height: Int, background: SIMD3<UInt8>) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 3)
        for i in 0..<(width * height) {
            pixels[3 * i] = background.x
            pixels[3 * i + 1] = background.y
            pixels[3 * i + 2] = background.z
        }
    }

    public subscript(x: Int, y: Int) -> SIMD3<UInt8> {
        get {
            let i = 3 * (y * width + x)
            return SIMD3(pixels[i], pixels[i + 1], pixels[i + 2])
        }
        set {
            guard x >= 0, y >= 0, x < width, y < height else { return }
            let i = 3 * (y * width + x)
            pixels[i] = newValue.x
            pixels[i + 1] = newValue.y
            pixels[i + 2] = newValue.z
        }
    }

    /// A filled disc of `radius` pixels around (x, y).
    public mutating func dot(_ x: Double, _ y: Double, radius: Double, _ color: SIMD3<UInt8>) {
        guard x.isFinite, y.isFinite, abs(x) < 1e6, abs(y) < 1e6 else { return }
        let r = Int(radius.rounded(.up))
        for dy in -r...r {
            for dx in -r...r where Double(dx * dx + dy * dy) <= radius * radius + 0.25 {
                self[Int(x.rounded()) + dx, Int(y.rounded()) + dy] = color
            }
        }
    }

    /// A line `thickness` pixels wide from a to b.
    public mutating func line(_ a: SIMD2<Double>, _ b: SIMD2<Double>, thickness: Double, _ color: SIMD3<UInt8>) {
        let length = ((b - a) * (b - a)).sum().squareRoot()
        guard length.isFinite, length < 1e5 else { return }
        let steps = Swift.max(1, Int(length.rounded(.up)) * 2)
        for step in 0...steps {
            let p = a + (b - a) * (Double(step) / Double(steps))
            dot(p.x, p.y, radius: thickness / 2, color)
        }
    }

    /// Text in the built-in 3×5 capitals font, `scale` pixels a font pixel, centred on (x, y).
    public mutating func text(_ string: String, centeredAt x: Double, _ y: Double, scale: Int, _ color: SIMD3<UInt8>) {
        let letters = Array(string.uppercased().unicodeScalars)
        let advance = 4 * scale
        var left = Int(x.rounded()) - (letters.count * advance - scale) / 2
        let top = Int(y.rounded()) - 5 * scale / 2
        for letter in letters {
            if let rows = PixelFont.glyphs[Character(letter)] {
                for (row, bits) in rows.enumerated() {
                    for column in 0..<3 where bits & (4 >> column) != 0 {
                        for sy in 0..<scale {
                            for sx in 0..<scale { self[left + column * scale + sx, top + row * scale + sy] = color }
                        }
                    }
                }
            }
            left += advance
        }
    }

    /// The image as a PNG (libpng).
    public func png() throws -> [UInt8] {
        var size = 0
        let ok = pixels.withUnsafeBufferPointer { cpng_encode_rgb($0.baseAddress, UInt32(width), UInt32(height), nil, &size) }
        guard ok != 0, size > 0 else { throw RoomScanError(.encodingFailed, "libpng could not size a \(width)×\(height) image") }
        var out = [UInt8](repeating: 0, count: size)
        let written = pixels.withUnsafeBufferPointer { rgb in
            out.withUnsafeMutableBufferPointer { cpng_encode_rgb(rgb.baseAddress, UInt32(width), UInt32(height), $0.baseAddress, &size) }
        }
        guard written != 0 else { throw RoomScanError(.encodingFailed, "libpng could not encode the thumbnail") }
        return Array(out.prefix(size))
    }

    /// The image as a lossy WebP (libwebp), `quality` 0–100.
    public func webp(quality: Float = 80) throws -> [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        let size = pixels.withUnsafeBufferPointer {
            WebPEncodeRGB($0.baseAddress, Int32(width), Int32(height), Int32(width * 3), quality, &output)
        }
        defer { WebPFree(output) }
        guard size > 0, let output else { throw RoomScanError(.encodingFailed, "libwebp could not encode the thumbnail") }
        return Array(UnsafeBufferPointer(start: output, count: size))
    }
}

/// A 3×5 capitals font: five rows of three bits per letter, most significant bit left.
enum PixelFont {
    static let glyphs: [Character: [UInt8]] = {
        let rows = [
            "A": "010 101 111 101 101", "B": "110 101 110 101 110", "C": "011 100 100 100 011", "D": "110 101 101 101 110",
            "E": "111 100 110 100 111", "F": "111 100 110 100 100", "G": "011 100 101 101 011", "H": "101 101 111 101 101",
            "I": "111 010 010 010 111", "J": "001 001 001 101 010", "K": "101 101 110 101 101", "L": "100 100 100 100 111",
            "M": "101 111 111 101 101", "N": "110 101 101 101 101", "O": "010 101 101 101 010", "P": "110 101 110 100 100",
            "Q": "010 101 101 110 011", "R": "110 101 110 101 101", "S": "011 100 010 001 110", "T": "111 010 010 010 010",
            "U": "101 101 101 101 111", "V": "101 101 101 101 010", "W": "101 101 111 111 101", "X": "101 101 010 101 101",
            "Y": "101 101 010 010 010", "Z": "111 001 010 100 111",
        ]
        return Dictionary(uniqueKeysWithValues: rows.map { key, value in
            (Character(key), value.split(separator: " ").map { UInt8($0, radix: 2) ?? 0 })
        })
    }()
}
