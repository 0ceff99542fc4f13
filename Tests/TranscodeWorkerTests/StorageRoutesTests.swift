import Auth
import BackboneTestSupport
import Contracts
import Foundation
import HTTPRouting
import ObjectStore
import Testing
@testable import TranscodeWorker

/// The Supabase Storage paths of the room files, against a real SeaweedFS holding what the real
/// pipeline wrote: what `getPublicURL` and `createSignedURL` of Supabase's own client build, loaded
/// as an image loader would.
@Suite("Storage paths: public outputs and the owner's signed URLs, nothing else of the bucket", .serialized,
       .enabled(if: Integration.isEnabled), .timeLimit(.minutes(4)))
struct StorageRoutesTests {
    static let owner = "owner-1"

    static func call(_ router: Router, _ method: HTTPMethod, _ path: String, query: [String: String] = [:], user: String? = owner,
                     body: String = "") async -> (status: HTTPStatus, headers: HTTPHeaders, code: String?) {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let user { headers.add(name: "Authorization", value: "Bearer \(JWTCodec(secret: JobLifecycleTests.secret).issue(userID: user))") }
        let answer = await router.respond(to: HTTPRequest(method: method, path: path, query: query, headers: headers, body: Array(body.utf8)))
        let code = ((RoomCatalogTests.json(answer) as? [String: Any])?["error"] as? [String: Any])?["code"] as? String
        return (answer.status, answer.headers, code)
    }

    @Test("a public room's thumbnail loads through /storage/v1/object/public/rooms/{thumbnail_path} (a WebP); private outputs, sources and bad paths do not; the owner's signed URL works, a stranger cannot sign")
    func storagePaths() async throws {
        try await SeaweedFSFixture.with { s3 in
            let store = S3ObjectStore(configuration: s3)
            let harness = try await JobLifecycleTests.Harness()
            var shown = try await StorePipelineTests.upload(store, package: "roomscan.usdz", harness: harness, visibility: .public)
            shown.redactions = [
                Redaction(textureRef: "textures/fabric.jpg", kind: .face, region: RedactionRegion(x: 0.1, y: 0.2, width: 0.3, height: 0.3),
                          method: "gaussian_blur_r18"),
                Redaction(textureRef: "textures/fabric.jpg", kind: .face, region: RedactionRegion(x: 0.6, y: 0.1, width: 0.2, height: 0.2),
                          method: "gaussian_blur_r18"),
            ]
            let hidden = try await StorePipelineTests.upload(store, package: "roomscan.usdz", harness: harness, visibility: .private)
            let service = harness.service(StoreTranscodePipeline(store: store, converter: RoomScanConverter(),
                                                                 workDirectory: NSTemporaryDirectory(), maxJobBytes: 64 << 20),
                                          links: StoreOutputLinks(store: store, ttl: .seconds(300)))
            try await JobLifecycleTests.running(service) { router in
                try await harness.produce([shown, hidden])
                func version(_ id: String) async -> [String: Any]? {
                    let answer = await RoomCatalogTests.get(router, "/rest/v1/room_versions", query: ["id": "eq.\(id)"], user: Self.owner)
                    return (RoomCatalogTests.json(answer) as? [[String: Any]])?.first
                }
                let ready = await Integration.eventually(timeout: .seconds(90)) {
                    let statuses = [await version(shown.versionId)?["status"] as? String, await version(hidden.versionId)?["status"] as? String]
                    return statuses == ["ready", "ready"]
                }
                #expect(ready, "both versions are ready in the catalog")
                // The paths as the app gets them: the feed's thumbnail_path, the owner's own room.
                let feed = await RoomCatalogTests.get(router, "/rest/v1/rooms", query: ["id": "eq.\(shown.roomId)"], user: "stranger")
                let card = try #require((RoomCatalogTests.json(feed) as? [[String: Any]])?.first)
                let thumbnail = try #require(card["thumbnail_path"] as? String)
                let manifest = try #require(card["manifest_path"] as? String)
                let privateThumbnail = try #require(await version(hidden.versionId)?["thumbnail_path"] as? String)

                // Straight through the router: what is refused, and how.
                let prefix = "/storage/v1/object/public/rooms/"
                let redirect = await Self.call(router, .get, prefix + thumbnail, user: nil)
                #expect(redirect.status.rawValue == 302 && redirect.headers["Location"]?.contains("X-Amz-Signature=") == true)
                #expect(redirect.headers["Cache-Control"]?.hasPrefix("public, max-age=") == true)
                for path in [prefix + "rooms/\(shown.roomId)/../\(hidden.roomId)/\(hidden.versionId)/thumbnail.webp",
                             prefix + "rooms/\(shown.roomId)//\(shown.versionId)/thumbnail.webp", prefix + "rooms/a\u{1}/b/c",
                             prefix + "rooms/" + String(repeating: "x", count: 1_100)] {
                    #expect(await Self.call(router, .get, path, user: nil).code == "INVALID_FIELD", "\(path.prefix(120))")
                }
                for path in [prefix + shown.source.usdzKey, prefix + shown.source.roomplanJsonKey, prefix + privateThumbnail,
                             prefix + "rooms/\(shown.roomId)/\(shown.versionId)/layers/nothing.glb", prefix + "rooms/\(shown.roomId)",
                             "/storage/v1/object/public/other-bucket/" + thumbnail] {
                    let answer = await Self.call(router, .get, path, user: Self.owner)
                    #expect(answer.status == .notFound && answer.code == "NOT_FOUND", "\(path)")
                }
                let sign = "/storage/v1/object/sign/rooms/" + privateThumbnail
                #expect(await Self.call(router, .post, sign, user: nil, body: #"{"expiresIn":60}"#).status == .unauthorized)
                #expect(await Self.call(router, .post, sign, body: "{").code == "INVALID_JSON")
                for body in [#"{"expiresIn":0}"#, #"{"expiresIn":"soon"}"#, #"{"expiresIn":99999999}"#, "{}"] {
                    #expect(await Self.call(router, .post, sign, body: body).code == "INVALID_FIELD", "\(body)")
                }
                #expect(await Self.call(router, .get, sign, user: nil).code == "FORBIDDEN", "no token")
                // A signed URL stops working when it expires.
                let shortLived = await router.respond(to: HTTPRequest(method: .post, path: sign, headers: [
                    "Authorization": "Bearer \(JWTCodec(secret: JobLifecycleTests.secret).issue(userID: Self.owner))"],
                    body: Array(#"{"expiresIn":1}"#.utf8)))
                let signedPath = try ContractCoding.decode(StorageSignedURL.self, from: shortLived.body).signedURL
                let token = try #require(signedPath.split(separator: "=").last.map(String.init))
                #expect(await Self.call(router, .get, sign, query: ["token": token], user: nil).status.rawValue == 302)
                try await Task.sleep(for: .seconds(2.1))
                #expect(await Self.call(router, .get, sign, query: ["token": token], user: nil).code == "FORBIDDEN", "expired")
                #expect((try? JWTCodec(secret: JobLifecycleTests.secret).verify(token)) == nil, "a signed-URL token is no bearer token")

                // Supabase's own Storage client, over real HTTP, as the app loads the files.
                let codec = JWTCodec(secret: JobLifecycleTests.secret)
                let result = try await CatalogPrivacyTests.witness("storage_client.py", router: router, spec: [
                    "owner": codec.issue(userID: Self.owner, ttl: 600), "stranger": codec.issue(userID: "stranger", ttl: 600),
                    "public_thumbnail": thumbnail, "public_manifest": manifest, "private_thumbnail": privateThumbnail,
                    "source": shown.source.usdzKey])
                func answer(_ name: String) -> [String: Any] { result[name] as? [String: Any] ?? [:] }
                let webp = answer("public_thumbnail")
                #expect(webp["status"] as? Int == 200 && webp["redirects"] as? [Int] == [302], "\(webp)")
                #expect(webp["magic"] as? String == "52494646" && webp["format"] as? String == "57454250", "RIFF…WEBP: \(webp)")
                // The manifest anyone can read counts the redactions and never says where they were.
                let published = answer("public_manifest")["json"] as? [String: Any]
                let textures = published?["redactions"] as? [[String: Any]]
                #expect(textures?.count == 1 && textures?.first?["count"] as? Int == 2 && textures?.first?["regions"] == nil, "\(textures ?? [])")
                for name in ["private_via_public", "owner_private_via_public", "source_via_public"] {
                    #expect(answer(name)["status"] as? Int == 404 && answer(name)["code"] as? String == "NOT_FOUND", "\(name): \(answer(name))")
                }
                #expect((result["signed_url"] as? String)?.contains("/storage/v1/object/sign/rooms/\(privateThumbnail)?token=") == true)
                let signed = answer("signed_owner")
                #expect(signed["status"] as? Int == 200 && signed["format"] as? String == "57454250", "\(signed)")
                for name in ["signed_other_object", "signed_tampered"] {
                    #expect(answer(name)["status"] as? Int == 403 && answer(name)["code"] as? String == "FORBIDDEN", "\(name): \(answer(name))")
                }
                #expect(answer("sign_stranger")["signedURL"] == nil && answer("sign_source")["signedURL"] == nil, "\(result)")
                #expect(answer("sign_stranger_raw") as NSDictionary == ["status": 404, "code": "NOT_FOUND"] as NSDictionary)
                #expect(answer("sign_source_raw") as NSDictionary == ["status": 404, "code": "NOT_FOUND"] as NSDictionary)

                // The owner still has the regions.
                let owned = await RoomCatalogTests.get(router, "/rest/v1/redactions", query: ["version_id": "eq.\(shown.versionId)"],
                                                       user: Self.owner)
                #expect((RoomCatalogTests.json(owned) as? [[String: Any]])?.count == 2)
            }
            await harness.close()
        }
    }
}
