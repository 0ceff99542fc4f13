import Contracts
import Foundation
import HTTPRouting
import ObjectStore
import Postgres
import ServiceLogging
import ServiceRuntime

/// Storage's resumable upload endpoint on the one origin, `/storage/v1/upload/resumable`: the tus
/// 1.0.0 protocol as Supabase's clients speak it (seed `002_*` §5.2, a large scan that survives
/// an interrupted connection):
///
/// - `OPTIONS` — the protocol's version and extensions (`creation`);
/// - `POST` with `Upload-Length` and `Upload-Metadata` (`bucketName`, `objectName`,
///   `contentType`, `cacheControl`, base64) — 201 with `Location`; only for an object the
///   caller's upload-init minted (its bearer token's user owns the version, still uploading) and
///   of the size upload-init declared; otherwise 403 `STORAGE_FORBIDDEN`;
/// - `PATCH {Location}` with `Upload-Offset` and a chunk (`application/offset+octet-stream`,
///   Supabase's 6 MB) — 204 with the new `Upload-Offset`. Each chunk is relayed as it arrives
///   to the store as one part of an S3 multipart upload (every chunk but the last at least
///   5 MiB, S3's smallest part), nothing held in memory; the last chunk assembles the object.
///   A chunk cut off stores nothing and leaves the offset where it was;
/// - `HEAD {Location}` — `Upload-Offset`: where to resume after an interruption.
///
/// What was taken is in PostgreSQL (`storage_resumable_uploads`, migration 130): any replica
/// answers any request of an upload.
struct ResumableUploadRoutes: Sendable {
    static let path = "/storage/v1/upload/resumable"
    static let version = "1.0.0"
    /// S3's smallest part but the last.
    static let minimumChunk: Int64 = 5 << 20

    let configuration: IngestConfiguration
    let uploads: RoomUploadStore
    let objects: any ObjectStore
    let database: PostgresClient
    let authenticator: RequestAuthenticator
    let logger: Logger

    static let migration = PostgresMigration(version: 130, name: "ingest_storage_resumable_uploads", sql: """
        CREATE TABLE IF NOT EXISTS storage_resumable_uploads (
            upload_id       text        PRIMARY KEY,
            owner_user_id   text        NOT NULL,
            version_id      text        NOT NULL,
            object_key      text        NOT NULL,
            upload_length   bigint      NOT NULL CHECK (upload_length > 0),
            upload_offset   bigint      NOT NULL DEFAULT 0,
            store_upload_id text        NOT NULL,
            part_etags      text[]      NOT NULL DEFAULT '{}',
            completed       boolean     NOT NULL DEFAULT false,
            created_at      timestamptz NOT NULL DEFAULT now(),
            updated_at      timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX IF NOT EXISTS storage_resumable_uploads_version ON storage_resumable_uploads (version_id);
        """)

    func register(on router: inout Router) {
        router.on(.options, Self.path) { _ in Self.options() }
        router.on(.options, Self.path + "/:id") { _ in Self.options() }
        router.post(Self.path) { request in await Self.answering { try await create(request) } }
        router.get(Self.path + "/:id") { request in await Self.answering { try await offset(request) } }
        router.streaming(.patch, Self.path + "/:id") { request in await Self.answering { try await patch(request) } }
    }

    static func options() -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: ["Tus-Resumable": version, "Tus-Version": version, "Tus-Extension": "creation",
                                                   "Tus-Max-Size": String(Int64(50 << 20))])
    }

    /// Errors in Storage's and the project's shape, every answer with `Tus-Resumable`.
    static func answering(_ body: () async throws -> HTTPResponse) async -> HTTPResponse {
        var response: HTTPResponse
        do { response = try await body() } catch let error as HTTPError {
            response = StorageUploadRoutes.storageResponse(error)
        } catch {
            response = StorageUploadRoutes.storageResponse(HTTPError.internalError)
        }
        response.headers.replaceOrAdd(name: "Tus-Resumable", value: version)
        return response
    }

    struct Row: Sendable {
        var uploadID: String
        var ownerUserID: String
        var versionID: String
        var key: String
        var length: Int64
        var offset: Int64
        var storeUploadID: String
        var etags: [String]
    }

    // MARK: - Creation

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let userID = try await authenticator.userID(request)
        try Self.requireVersion(request)
        guard let length = request.headers["Upload-Length"].flatMap({ Int64($0) }), length > 0 else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "Upload-Length must be a positive size")
        }
        let metadata = Self.metadata(request.headers["Upload-Metadata"] ?? "")
        guard metadata["bucketName"] == StorageUploadRoutes.bucket, let key = metadata["objectName"] else {
            throw StorageUploadRoutes.forbidden("Upload-Metadata must name bucketName rooms and the objectName upload-init answered")
        }
        let segments = key.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[0] == "rooms", UUID(uuidString: String(segments[2])) != nil else {
            throw StorageUploadRoutes.forbidden("not an upload object")
        }
        let found: RoomUploadStore.Upload?
        do { found = try await uploads.upload(String(segments[2]).lowercased()) } catch { throw unavailable("room store unavailable") }
        // Only the caller's own upload, still open, at a key its upload-init minted.
        guard let upload = found, upload.ownerUserID == userID, upload.status == "uploading",
              key == upload.usdzKey || key == upload.roomplanJsonKey else {
            throw StorageUploadRoutes.forbidden("no upload of yours at \(key): resumable uploads are for the objects your upload-init minted")
        }
        let sizeFits = key == upload.usdzKey ? length == upload.usdzBytes : upload.acceptsRoomplanJson(size: length)
        guard sizeFits else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "Upload-Length is \(length); upload-init declared \(key == upload.usdzKey ? upload.usdzBytes : upload.roomplanJsonBytes)")
        }
        let contentType = key == upload.usdzKey ? "model/vnd.usdz+zip" : "application/json"
        let storeUploadID: String
        do { storeUploadID = try await objects.createMultipartUpload(key: key, contentType: contentType) } catch {
            throw storageUnavailable(error)
        }
        let id = UUID().uuidString.lowercased()
        do {
            try await database.execute("""
                INSERT INTO storage_resumable_uploads (upload_id, owner_user_id, version_id, object_key, upload_length, store_upload_id)
                VALUES ($1, $2, $3, $4, $5, $6)
                """, [id, userID, upload.versionID, key, length, storeUploadID])
        } catch {
            try? await objects.abortMultipartUpload(key: key, uploadId: storeUploadID)
            throw unavailable("room store unavailable")
        }
        let location = (configuration.appBaseURL ?? "") + Self.path + "/" + id
        return HTTPResponse(status: .created, headers: ["Location": location, "Upload-Offset": "0"])
    }

    /// `Upload-Metadata`: comma-separated `key base64value` pairs.
    static func metadata(_ header: String) -> [String: String] {
        var pairs: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            guard let name = parts.first else { continue }
            let value = parts.count > 1 ? Data(base64Encoded: String(parts[1])).map { String(decoding: $0, as: UTF8.self) } : ""
            if let value { pairs[String(name)] = value }
        }
        return pairs
    }

    static func requireVersion(_ request: HTTPRequest) throws(HTTPError) {
        guard request.headers["Tus-Resumable"] == version else {
            throw HTTPError(.init(412), code: ErrorCode.invalidField.rawValue, message: "Tus-Resumable must be \(version)")
        }
    }

    // MARK: - Offset and chunks

    func offset(_ request: HTTPRequest) async throws -> HTTPResponse {
        let row = try await owned(request)
        return HTTPResponse(status: .ok, headers: ["Upload-Offset": String(row.offset), "Upload-Length": String(row.length),
                                                   "Cache-Control": "no-store"])
    }

    func patch(_ request: HTTPRequest) async throws -> HTTPResponse {
        let row = try await owned(request)
        try Self.requireVersion(request)
        guard request.headers["Content-Type"]?.lowercased().hasPrefix("application/offset+octet-stream") == true else {
            throw HTTPError(.init(415), code: ErrorCode.invalidField.rawValue, message: "a chunk is application/offset+octet-stream")
        }
        guard let offset = request.headers["Upload-Offset"].flatMap({ Int64($0) }), offset == row.offset else {
            throw HTTPError(.conflict, code: ErrorCode.invalidField.rawValue,
                            message: "Upload-Offset must be \(row.offset), where the upload stands (HEAD tells it)")
        }
        guard let stream = request.bodyStream, let chunk = stream.declaredLength, chunk > 0, offset + chunk <= row.length else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "a chunk needs its Content-Length, at most \(row.length - row.offset) bytes")
        }
        let last = offset + chunk == row.length
        guard last || chunk >= Self.minimumChunk else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "every chunk but the last is at least \(Self.minimumChunk) bytes")
        }
        let current: RoomUploadStore.Upload?
        do { current = try await uploads.upload(row.versionID) } catch { throw unavailable("room store unavailable") }
        guard current?.status == "uploading" else { throw StorageUploadRoutes.forbidden("the version is no longer uploading") }

        let body = SignedUploadBody(stream: stream, boundary: nil)
        body.expect(chunk)
        let part = row.etags.count + 1
        let etag: String
        do {
            etag = try await objects.uploadPart(from: body, length: chunk, key: row.key, uploadId: row.storeUploadID, partNumber: part)
        } catch {
            if let failure = body.failure {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "nothing stored: \(failure)")
            }
            throw storageUnavailable(error)
        }
        let etags = row.etags + [etag]
        if last {
            do {
                try await objects.completeMultipartUpload(
                    key: row.key, uploadId: row.storeUploadID,
                    parts: etags.enumerated().map { CompletedPart(number: $0.offset + 1, etag: $0.element) })
            } catch {
                throw storageUnavailable(error)
            }
        }
        let updated: Int
        do {
            updated = try await database.execute("""
                UPDATE storage_resumable_uploads SET upload_offset = $3, part_etags = $4::text[], completed = $5, updated_at = now()
                WHERE upload_id = $1 AND upload_offset = $2
                """, [row.uploadID, offset, offset + chunk, etags, last])
        } catch {
            throw unavailable("room store unavailable")
        }
        guard updated == 1 else {
            throw HTTPError(.conflict, code: ErrorCode.invalidField.rawValue, message: "another request moved the upload on")
        }
        if last {
            logger.info("a resumable upload is complete", metadata: ["storage.key": "\(row.key)", "room.version": "\(row.versionID)"])
        }
        return HTTPResponse(status: .noContent, headers: ["Upload-Offset": String(offset + chunk)])
    }

    /// The caller's upload named in the path; anyone else's, or none, is 404.
    private func owned(_ request: HTTPRequest) async throws -> Row {
        let userID = try await authenticator.userID(request)
        let id = request.pathParameters["id"] ?? ""
        let rows: PostgresRows
        do {
            rows = try await database.query("""
                SELECT upload_id, owner_user_id, version_id, object_key, upload_length, upload_offset, store_upload_id, part_etags
                FROM storage_resumable_uploads WHERE upload_id = $1
                """, [id])
        } catch {
            throw unavailable("room store unavailable")
        }
        guard let row = rows.first, try row.decode(String.self, "owner_user_id") == userID else {
            throw HTTPError(.notFound, code: ErrorCode.notFound.rawValue, message: "no such upload")
        }
        return Row(uploadID: id, ownerUserID: userID, versionID: try row.decode(String.self, "version_id"),
                   key: try row.decode(String.self, "object_key"), length: try row.decode(Int64.self, "upload_length"),
                   offset: try row.decode(Int64.self, "upload_offset"), storeUploadID: try row.decode(String.self, "store_upload_id"),
                   etags: try row.decode([String].self, "part_etags"))
    }

    private func storageUnavailable(_ error: any Error) -> HTTPError { configuration.storageUnavailable(error, logger: logger) }

    private func unavailable(_ message: String) -> HTTPError { configuration.unavailable(message) }
}
