import Contracts
import Foundation
import JSON

/// Writes catalog rows as PostgREST would return them: snake_case columns in table order
/// (or the `select` order), embedded versions under their alias, and the presigned URLs of
/// the outputs. Owner-only columns (`state`, `latest_version_id`, `latest_status`) are null
/// for other callers: they would tell a version's failure that the rules hide.
struct CatalogRenderer {
    let urls: [String: String]
    let expiresAt: Date
    let viewer: CatalogViewer

    func write(_ room: CatalogRoomRow, columns: [String]?, embeds: [PostgRESTQuery.Embed],
               embedded: [PostgRESTQuery.Embed: [CatalogVersionRow]], to w: inout JSONWriter) {
        w.beginObject()
        let owner = viewer.owns(room.ownerID)
        let published = room.currentVersionID != nil
        for column in columns ?? CatalogResource.rooms.columns {
            w.dynamicKey(column)
            switch column {
            case "id": w.string(room.roomID)
            case "owner_id": w.string(room.ownerID)
            case "title": w.string(room.title)
            case "tags":
                w.beginArray()
                for tag in room.tags { w.string(tag) }
                w.endArray()
            case "visibility": w.string(room.visibility)
            case "location_city": optional(room.locationCity, &w)
            case "created_at": w.timestamp(room.createdAt)
            case "updated_at": w.timestamp(room.updatedAt)
            case "current_version_id": optional(room.currentVersionID, &w)
            case "quality_grade": optional(room.qualityGrade, &w)
            case "thumbnail_path": optional(published ? room.thumbnailKey.map(CatalogRoutes.webpKey) : nil, &w)
            case "thumbnail_url": optional(published ? room.thumbnailKey.flatMap { urls[CatalogRoutes.webpKey($0)] } : nil, &w)
            case "manifest_path": optional(published ? room.manifestKey : nil, &w)
            case "manifest_url": optional(published ? room.manifestKey.flatMap { urls[$0] } : nil, &w)
            case "feed_rank": w.string(room.feedRank)
            case "state": optional(owner ? room.state : nil, &w)
            case "latest_version_id": optional(owner ? room.latestVersionID : nil, &w)
            case "latest_status": optional(owner ? room.latestStatus : nil, &w)
            case "like_count": w.int(room.likeCount)
            case "comment_count": w.int(room.commentCount)
            case "remix_count": w.int(room.remixCount)
            case "remixed_from": optional(room.remixedFrom, &w)
            default: w.null()
            }
        }
        for embed in embeds {
            w.dynamicKey(embed.name)
            let versions = embedded[embed] ?? []
            switch embed.kind {
            case .currentVersion:
                if let id = room.currentVersionID, let version = versions.first(where: { $0.versionID == id }) {
                    write(version, columns: embed.columns, to: &w)
                } else {
                    w.null()
                }
            case .versions:
                w.beginArray()
                for version in versions where version.roomID == room.roomID { write(version, columns: embed.columns, to: &w) }
                w.endArray()
            case .author:
                w.null()
            }
        }
        w.endObject()
    }

    func write(_ version: CatalogVersionRow, columns: [String]?, to w: inout JSONWriter) {
        w.beginObject()
        let ready = version.status == RoomVersionStatus.ready.rawValue
        for column in columns ?? CatalogResource.roomVersions.columns {
            w.dynamicKey(column)
            switch column {
            case "id": w.string(version.versionID)
            case "room_id": w.string(version.roomID)
            case "owner_id": w.string(version.ownerID)
            case "status": w.string(version.status)
            case "stage": optional(version.stage, &w)
            case "error": optional(version.errorCode, &w)
            case "error_reason": optional(version.reason, &w)
            case "attempts": w.int(version.attempts)
            case "quality_grade": optional(version.qualityGrade, &w)
            case "manifest_path": optional(ready ? version.manifestKey : nil, &w)
            case "manifest_url": optional(ready ? version.manifestKey.flatMap { urls[$0] } : nil, &w)
            case "thumbnail_path": optional(ready ? version.thumbnailKey.map(CatalogRoutes.webpKey) : nil, &w)
            case "thumbnail_url": optional(ready ? version.thumbnailKey.flatMap { urls[CatalogRoutes.webpKey($0)] } : nil, &w)
            case "glb_paths", "glb_urls":
                guard ready else { w.null(); continue }
                w.beginObject()
                for key in version.glbKeys {
                    w.dynamicKey(Self.layerName(key))
                    if column == "glb_paths" { w.string(key) } else { optional(urls[key], &w) }
                }
                w.endObject()
            case "urls_expire_at": if ready { w.timestamp(expiresAt) } else { w.null() }
            case "created_at": w.timestamp(version.createdAt)
            case "updated_at": w.timestamp(version.updatedAt)
            case "finished_at": if let at = version.finishedAt { w.timestamp(at) } else { w.null() }
            default: w.null()
            }
        }
        w.endObject()
    }

    func write(_ redaction: CatalogRedactionRow, columns: [String]?, to w: inout JSONWriter) {
        w.beginObject()
        for column in columns ?? CatalogResource.redactions.columns {
            w.dynamicKey(column)
            switch column {
            case "id": w.string(redaction.id)
            case "version_id": w.string(redaction.versionID)
            case "texture_ref": w.string(redaction.textureRef)
            case "kind": w.string(redaction.kind)
            case "region":
                w.beginObject()
                w.key("x"); w.double(redaction.region.x)
                w.key("y"); w.double(redaction.region.y)
                w.key("width"); w.double(redaction.region.width)
                w.key("height"); w.double(redaction.region.height)
                w.endObject()
            case "method": w.string(redaction.method)
            case "created_at": w.timestamp(redaction.createdAt)
            default: w.null()
            }
        }
        w.endObject()
    }

    /// `rooms/r/v/layers/walls.glb` → `walls`.
    static func layerName(_ key: String) -> String {
        let file = key.split(separator: "/").last.map(String.init) ?? key
        return file.hasSuffix(".glb") ? String(file.dropLast(4)) : file
    }

    private func optional(_ value: String?, _ w: inout JSONWriter) {
        if let value { w.string(value) } else { w.null() }
    }
}
