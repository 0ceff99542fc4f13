import Contracts
import Foundation
import HTTPRouting
import Ingest
import Testing

@Suite("Room upload-complete validation")
struct RoomVersionValidatorTests {
    let validator = RoomVersionValidator(maxUSDZBytes: 50 << 20)

    static func request(tags: [String] = ["客厅", "3D 重建"], usdzBytes: Int64 = 12_000_000, usdzKey: String = "rooms/r1/v1/source.usdz",
                        redactions: [Redaction] = [], sha: String? = nil, roomID: String = UUID().uuidString) -> RoomVersionCompleteRequest {
        RoomVersionCompleteRequest(
            roomId: roomID, versionId: UUID().uuidString, title: "Living room", tags: tags, visibility: .public,
            source: RoomSource(usdzKey: usdzKey, usdzBytes: usdzBytes, roomplanJsonKey: "rooms/r1/v1/roomplan.json",
                               roomplanJsonBytes: 40_000, sha256: sha),
            redactions: redactions)
    }

    func code(_ request: RoomVersionCompleteRequest) -> String? {
        do {
            try validator.validate(request)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a complete upload with unicode tags and valid redactions passes")
    func valid() {
        let redaction = Redaction(textureRef: "textures/wall_0.png", kind: .face,
                                  region: RedactionRegion(x: 0.1, y: 0.2, width: 0.3, height: 0.3), method: "gaussian")
        #expect(code(Self.request(redactions: [redaction], sha: String(repeating: "ab", count: 32))) == nil)
    }

    @Test("a usdz over 50 MB is FILE_TOO_LARGE with status 413")
    func tooLarge() throws {
        #expect(code(Self.request(usdzBytes: 50 << 20)) == nil)
        #expect(code(Self.request(usdzBytes: (50 << 20) + 1)) == "FILE_TOO_LARGE")
        #expect(throws: HTTPError.self) { try validator.validate(Self.request(usdzBytes: 60 << 20)) }
    }

    @Test("more than 8 tags or a tag with illegal characters is INVALID_TAGS")
    func tags() {
        #expect(code(Self.request(tags: (1...8).map { "t\($0)" })) == nil)
        #expect(code(Self.request(tags: (1...9).map { "t\($0)" })) == "INVALID_TAGS")
        #expect(code(Self.request(tags: ["<script>"])) == "INVALID_TAGS")
        #expect(code(Self.request(tags: ["  "])) == "INVALID_TAGS")
        #expect(code(Self.request(tags: [String(repeating: "x", count: 33)])) == "INVALID_TAGS")
    }

    @Test("regions outside 0…1, empty regions or empty texture refs are REDACTION_INVALID")
    func redactions() {
        for region in [RedactionRegion(x: -0.1, y: 0, width: 0.5, height: 0.5), RedactionRegion(x: 0.8, y: 0, width: 0.5, height: 0.5),
                       RedactionRegion(x: 0, y: 0, width: 0, height: 0.5), RedactionRegion(x: 0, y: 0, width: .nan, height: 0.5)] {
            #expect(code(Self.request(redactions: [Redaction(textureRef: "t.png", kind: .manual, region: region, method: "blur")]))
                    == "REDACTION_INVALID")
        }
        let ok = RedactionRegion(x: 0, y: 0, width: 1, height: 1)
        #expect(code(Self.request(redactions: [Redaction(textureRef: "", kind: .manual, region: ok, method: "blur")])) == "REDACTION_INVALID")
    }

    @Test("bad ids, unsafe storage keys, empty sizes and bad digests are INVALID_FIELD")
    func fields() {
        #expect(code(Self.request(roomID: "room-1")) == "INVALID_FIELD")
        #expect(code(Self.request(usdzKey: "../etc/passwd")) == "INVALID_FIELD")
        #expect(code(Self.request(usdzKey: "/abs/source.usdz")) == "INVALID_FIELD")
        #expect(code(Self.request(usdzBytes: 0)) == "INVALID_FIELD")
        #expect(code(Self.request(sha: "xyz")) == "INVALID_FIELD")
    }
}

extension RoomVersionValidatorTests {
    @Test("control characters in a redaction's texture or method are REDACTION_INVALID (they could not be stored)")
    func controlCharacters() {
        let ok = RedactionRegion(x: 0, y: 0, width: 1, height: 1)
        #expect(code(Self.request(redactions: [Redaction(textureRef: "t.png", kind: .manual, region: ok, method: "blur\u{0}")]))
                == "REDACTION_INVALID")
        #expect(code(Self.request(redactions: [Redaction(textureRef: "t\u{1}.png", kind: .manual, region: ok, method: "blur")]))
                == "REDACTION_INVALID")
    }
}
