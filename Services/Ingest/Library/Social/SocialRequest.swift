import Contracts
import Foundation
import HTTPRouting
import JSON

/// Reading a social write as Supabase's clients send it: one row as a JSON object (or an array
/// holding one), its columns checked against the table's, and `column=eq.value` filters.
enum SocialRequest {
    /// The row of an insert, update or upsert: JSON strings and nulls by column.
    static func oneRow(_ request: HTTPRequest, table: String, columns: Set<String>) throws(HTTPError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try ContractCoding.decoder.decode(JSONValue.self, from: Data(request.body))
        } catch {
            throw HTTPError(.badRequest, code: ErrorCode.invalidJSON.rawValue, message: "body is not valid JSON")
        }
        let object: [String: JSONValue]
        switch value {
        case .object(let fields): object = fields
        case .array(let rows) where rows.count == 1:
            guard case .object(let fields) = rows[0] else { fallthrough }
            object = fields
        default:
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "body: one \(table) row, a JSON object")
        }
        for (name, field) in object.sorted(by: { $0.key < $1.key }) {
            guard columns.contains(name) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                                message: "\(table) has no writable column \(name) (writable: \(columns.sorted().joined(separator: ", ")))")
            }
            switch field {
            case .string, .null: continue
            default: throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "\(name) must be a string")
            }
        }
        return object
    }

    /// A required identifier column.
    static func identifier(_ row: [String: JSONValue], _ name: String) throws(HTTPError) -> String {
        guard case .string(let value)? = row[name], Identifier.isValid(value) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "\(name) is required: \(Identifier.rule)")
        }
        return value
    }

    /// An optional UUID column (a client-chosen id, which makes a retry a 409 rather than a second row), lower-cased.
    static func optionalUUID(_ row: [String: JSONValue], _ name: String) throws(HTTPError) -> String? {
        switch row[name] {
        case nil, .null?: return nil
        case .string(let text)? where UUID(uuidString: text) != nil: return text.lowercased()
        default: throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "\(name) must be a UUID")
        }
    }

    /// A comment's body: trimmed, 1…2,000 characters, no control characters.
    static func commentBody(_ value: JSONValue?) throws(HTTPError) -> String {
        guard case .string(let raw)? = value else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "body is required: the comment's text")
        }
        let body = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !body.isEmpty else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "body is empty: a comment has 1–2000 characters")
        }
        guard body.count <= RoomInteraction.maxBodyCharacters else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                            message: "body has \(body.count) characters: a comment has at most \(RoomInteraction.maxBodyCharacters)")
        }
        guard !Identifier.containsControlCharacter(body) else {
            throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue, message: "body holds a control character")
        }
        return body
    }

    /// The profile columns given (nil = not given; `.some(nil)` = set to null).
    static func profileFields(_ row: [String: JSONValue]) throws(HTTPError) -> (displayName: String??, avatarPath: String??) {
        var displayName: String?? = nil
        var avatarPath: String?? = nil
        switch row["display_name"] {
        case nil: break
        case .null?: displayName = .some(nil)
        case .string(let raw)?:
            let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !name.isEmpty, name.count <= RoomInteraction.maxDisplayNameCharacters, !Identifier.containsControlCharacter(name) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                                message: "display_name: 1–\(RoomInteraction.maxDisplayNameCharacters) characters without control characters")
            }
            displayName = .some(name)
        default: break
        }
        switch row["avatar_path"] {
        case nil: break
        case .null?: avatarPath = .some(nil)
        case .string(let path)?:
            guard !path.isEmpty, path.utf8.count <= RoomInteraction.maxAvatarPathBytes, !Identifier.containsControlCharacter(path) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidField.rawValue,
                                message: "avatar_path: 1–\(RoomInteraction.maxAvatarPathBytes) bytes without control characters")
            }
            avatarPath = .some(path)
        default: break
        }
        return (displayName, avatarPath)
    }

    /// `column=eq.value` filters of a delete or update, on `allowed` columns only
    /// (`select` and `apikey` are not filters).
    static func filters(_ request: HTTPRequest, table: String, allowed: Set<String>) throws(HTTPError) -> [String: String] {
        var filters: [String: String] = [:]
        for (name, value) in request.query.sorted(by: { $0.key < $1.key }) where !["select", "apikey", "columns"].contains(name) {
            guard allowed.contains(name) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue,
                                message: "\(table) can be filtered here by \(allowed.sorted().joined(separator: ", ")) only, not \(name)")
            }
            guard value.hasPrefix("eq."), Identifier.isValid(String(value.dropFirst(3))) else {
                throw HTTPError(.badRequest, code: ErrorCode.invalidQuery.rawValue, message: "filter \(name) must be eq.{value}")
            }
            filters[name] = String(value.dropFirst(3))
        }
        return filters
    }

    /// Now, to the millisecond (what the answers and the records carry is what is stored).
    static func now() -> Date {
        Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
