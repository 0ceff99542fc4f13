import Auth
import Contracts
import Foundation
import HTTPRouting
import ServiceRuntime

/// The Supabase Storage paths a supabase-swift app builds for the room files, bucket `rooms`
/// (its object paths are the catalog's `thumbnail_path`, `manifest_path` and `glb_paths`):
///
/// - `GET /storage/v1/object/public/rooms/{path}` — an output of a ready version of a public
///   room (`getPublicURL`): a 302 to a presigned GET of the object store, which the client
///   follows; the worker never carries the bytes. The redirect may be kept by a cache for
///   `Cache-Control: public, max-age` (at most half the link's lifetime).
/// - `POST /storage/v1/object/sign/rooms/{path}` `{"expiresIn":N}` (`createSignedURL`) — for an
///   output the caller may read (their own rooms' in any visibility, anyone's public ones):
///   `{"signedURL":"/object/sign/rooms/{path}?token=…"}`, relative to `/storage/v1`.
/// - `GET /storage/v1/object/sign/rooms/{path}?token=…` — the signed URL: a 302 as above while
///   the token holds and the version is still there.
///
/// Nothing else of the bucket is reachable: sources, unfinished or failed versions, other users'
/// private rooms and unknown keys are 404 `NOT_FOUND` (the same answer, so nothing can be
/// probed); a malformed path (`..`, empty segments, control characters, over 1,024 bytes) is 400
/// `INVALID_FIELD`; a bad or expired token 403 `FORBIDDEN`.
struct StorageRoutes: Sendable {
    static let bucket = "rooms"
    static let publicPrefix = "/storage/v1/object/public/\(bucket)/"
    static let signPrefix = "/storage/v1/object/sign/\(bucket)/"

    let store: CatalogStore
    let authenticator: RequestAuthenticator
    let links: any OutputLinks
    let signer: StorageURLSigner
    /// The longest `expiresIn` a signed URL may have.
    let maxSignedSeconds: Int
    /// How long a redirect may be reused (`Cache-Control: max-age`).
    let redirectMaxAge: Int

    func router() -> Router {
        var router = Router()
        router.get(Self.publicPrefix + "*path") { request in try await self.publicObject(request) }
        router.post(Self.signPrefix + "*path") { request in try await self.sign(request) }
        router.get(Self.signPrefix + "*path") { request in try await self.signedObject(request) }
        return router
    }

    /// An object path of the bucket: `rooms/{roomId}/{versionId}/{file}` or
    /// `rooms/{roomId}/{versionId}/layers/{layer}.glb`.
    struct ObjectPath: Equatable {
        var key: String
        var roomID: String
        var versionID: String
    }

    /// The object path after `prefix` in the request's (percent-decoded) path.
    static func objectPath(_ path: String, after prefix: String) throws(HTTPError) -> ObjectPath {
        let key = path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : ""
        let segments = key.split(separator: "/", omittingEmptySubsequences: false)
        guard !key.isEmpty, key.utf8.count <= 1_024, !Contracts.Identifier.containsControlCharacter(key), !key.contains("\\"),
              segments.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "path: an object path is 1–1024 bytes of non-empty segments, without . or .. segments or control characters")
        }
        guard segments.first == "rooms", segments.count == 4 || (segments.count == 5 && segments[3] == "layers") else {
            throw notFound
        }
        return ObjectPath(key: key, roomID: String(segments[1]), versionID: String(segments[2]))
    }

    static let notFound = HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no such object")

    func publicObject(_ request: HTTPRequest) async throws -> HTTPResponse {
        let path = try Self.objectPath(request.path, after: Self.publicPrefix)
        guard let outputs = try await store.outputs(roomID: path.roomID, versionID: path.versionID),
              outputs.roomIsPublic, outputs.keys.contains(path.key) else { throw Self.notFound }
        return try await redirect(to: path.key, cacheControl: "public, max-age=\(redirectMaxAge)")
    }

    func sign(_ request: HTTPRequest) async throws -> HTTPResponse {
        let viewer = try await CatalogViewer.of(request, authenticator: authenticator)
        let path = try Self.objectPath(request.path, after: Self.signPrefix)
        let body = try request.decodeFields(StorageSignRequest.self, decoder: ContractCoding.decoder)
        guard (1...maxSignedSeconds).contains(body.expiresIn) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "expiresIn: 1–\(maxSignedSeconds) seconds")
        }
        guard let outputs = try await store.outputs(roomID: path.roomID, versionID: path.versionID),
              outputs.roomIsPublic || viewer.owns(outputs.ownerID), outputs.keys.contains(path.key) else { throw Self.notFound }
        let token = signer.token(for: Self.bucket + "/" + path.key, seconds: body.expiresIn)
        let escaped = path.key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path.key
        return .json(StorageSignedURL(signedURL: "/object/sign/\(Self.bucket)/\(escaped)?token=\(token)"), encoder: ContractCoding.encoder)
    }

    func signedObject(_ request: HTTPRequest) async throws -> HTTPResponse {
        let path = try Self.objectPath(request.path, after: Self.signPrefix)
        guard let token = request.query["token"], signer.isValid(token, for: Self.bucket + "/" + path.key) else {
            throw HTTPError(.forbidden, code: ErrorCode.forbidden.rawValue, message: "the signed URL is not valid for this object, or it expired")
        }
        guard let outputs = try await store.outputs(roomID: path.roomID, versionID: path.versionID),
              outputs.keys.contains(path.key) else { throw Self.notFound }
        return try await redirect(to: path.key, cacheControl: "private, max-age=\(redirectMaxAge)")
    }

    /// 302 to a presigned GET of `key`.
    func redirect(to key: String, cacheControl: String) async throws -> HTTPResponse {
        let (urls, _) = try await links.presign([key])
        guard let url = urls[key] else { throw Self.notFound }
        return HTTPResponse(status: HTTPStatus(302), headers: ["Location": url, "Cache-Control": cacheControl])
    }
}
