import Contracts
import Postgres

/// A ready version's outputs, as the storage paths serve them.
struct CatalogOutputs: Sendable, Equatable {
    var ownerID: String
    /// The room's visibility (the newest request's), not the version's own.
    var roomIsPublic: Bool
    /// Every key the version wrote: manifest, both thumbnails, the GLBs.
    var keys: Set<String>
}

extension CatalogStore {
    /// The outputs of version `versionID` of room `roomID` when it is ready; nil otherwise
    /// (unknown, abandoned, erased, still uploading or transcoding, failed).
    func outputs(roomID: String, versionID: String) async throws -> CatalogOutputs? {
        let rows = try await database.query("""
            SELECT v.owner_id, r.visibility, v.manifest_key, v.thumbnail_key, COALESCE(v.glb_keys, '{}') AS glb_keys
            FROM \(tables.versions) v JOIN \(tables.rooms) r ON r.room_id = v.room_id
            WHERE v.version_id = $1 AND v.room_id = $2 AND v.status = 'ready'
            """, [versionID, roomID])
        guard let row = rows.first else { return nil }
        var keys = Set(try row.decode([String].self, "glb_keys"))
        if let manifest = try row.decode(String?.self, "manifest_key") { keys.insert(manifest) }
        if let thumbnail = try row.decode(String?.self, "thumbnail_key") {
            keys.insert(thumbnail)
            keys.insert(CatalogRoutes.webpKey(thumbnail))
        }
        return CatalogOutputs(ownerID: try row.decode(String.self, "owner_id"),
                              roomIsPublic: try row.decode(String.self, "visibility") == RoomVisibility.public.rawValue, keys: keys)
    }
}
