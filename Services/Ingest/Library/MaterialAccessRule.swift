import Contracts
import Foundation

/// Who may record reading events against which material.
///
/// An unknown material, one of another target type, or one owned by someone else is
/// `MATERIAL_ACCESS_DENIED` (the answer reveals nothing about other users' files); a
/// deleted one `SOURCE_DELETED`; a `temporaryFile` whose `expiresAt` has passed (by the
/// server clock at receipt) `TEMPORARY_MATERIAL_EXPIRED`. A lesson without an owner is
/// shared by every user.
public enum MaterialAccessRule {
    public static func check(_ entry: MaterialResponse?, userID: String, targetType: ReadingTargetType,
                             now: Date) -> ReadingEventValidator.Rejection? {
        guard let entry, entry.readingTargetType == targetType else {
            return denied("material is unknown")
        }
        if let owner = entry.ownerUserId, owner != userID {
            return denied("material is unknown")
        }
        if entry.deleted {
            return ReadingEventValidator.Rejection(code: .sourceDeleted, field: "materialId", message: "material was deleted")
        }
        if entry.readingTargetType == .temporaryFile, let expiresAt = entry.expiresAt, expiresAt <= now {
            return ReadingEventValidator.Rejection(code: .temporaryMaterialExpired, field: "materialId",
                                                   message: "temporary file has expired")
        }
        return nil
    }

    private static func denied(_ message: String) -> ReadingEventValidator.Rejection {
        ReadingEventValidator.Rejection(code: .materialAccessDenied, field: "materialId", message: message)
    }
}
