import Foundation
import Testing
@testable import RoomScan

@Suite("Plan thumbnails")
struct ThumbnailTests {
    @Test("the plan draws the walls dark, the door in its colour and an object label; PNG and WebP carry their signatures")
    func drawsPlan() throws {
        let room = try ScanFixtures.room("roomscan")
        let image = PlanThumbnail.render(room)
        #expect(image.width == 512 && image.height == 512)
        let colors = Set(stride(from: 0, to: image.pixels.count, by: 3).map {
            SIMD3(image.pixels[$0], image.pixels[$0 + 1], image.pixels[$0 + 2])
        })
        #expect(colors.contains(PlanThumbnail.wallColor) && colors.contains(PlanThumbnail.doorColor))
        #expect(colors.contains(PlanThumbnail.windowColor) && colors.contains(PlanThumbnail.labelColor))
        // The 5 × 4 m room fills the width: wall pixels near both side margins.
        let wallColumns = (0..<512).filter { x in (0..<512).contains { image[x, $0] == PlanThumbnail.wallColor } }
        #expect((wallColumns.first ?? 512) < 48 && (wallColumns.last ?? 0) > 464)
        let png = try image.png()
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let webp = try image.webp()
        #expect(Array(webp.prefix(4)) == Array("RIFF".utf8) && Array(webp[8..<12]) == Array("WEBP".utf8))
    }

    @Test("Pillow opens both thumbnails as 512×512 images", .enabled(if: Witness.hasPython(["PIL"])))
    func pillowOpens() throws {
        let image = PlanThumbnail.render(try ScanFixtures.room("roomscan"))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("thumb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let png = folder.appendingPathComponent("thumbnail.png"), webp = folder.appendingPathComponent("thumbnail.webp")
        try Data(try image.png()).write(to: png)
        try Data(try image.webp()).write(to: webp)
        let result = try Witness.run(Witness.python, ["-c", """
            import sys
            from PIL import Image
            for path in sys.argv[1:]:
                im = Image.open(path); im.load()
                print(im.format, im.size[0], im.size[1], len(im.convert("RGB").getcolors(1 << 20)) > 3)
            """, png.path, webp.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.split(separator: "\n") == ["PNG 512 512 True", "WEBP 512 512 True"], "\(result.output)")
    }

    @Test("an empty or absurd room still renders a blank plan without crashing")
    func emptyRoom() throws {
        let empty = try CapturedRoom(json: Data(#"{"walls":[],"doors":[],"windows":[],"objects":[]}"#.utf8))
        #expect(try PlanThumbnail.render(empty).png().count > 8)
    }
}
