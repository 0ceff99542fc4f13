import Foundation

/// A `user.deletions.v1` record (key: the user id): every service erases everything it holds
/// of `userId` and confirms on `user.deletions.status.v1` (seed `002_*` §11 P-4, phase 2).
public struct UserDeletionRecord: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var requestId: String
    public var userId: String
    public var requestedAt: Date
    public var purgeAt: Date

    public init(requestId: String, userId: String, requestedAt: Date, purgeAt: Date, schemaVersion: Int = currentSchemaVersion) {
        self.schemaVersion = schemaVersion
        self.requestId = requestId
        self.userId = userId
        self.requestedAt = requestedAt
        self.purgeAt = purgeAt
    }
}

/// A `user.deletions.status.v1` record (key: the request id): one service erased the user
/// of `requestId`. It names the request, not the user.
public struct UserDeletionStatus: Sendable, Hashable, Codable {
    public static let currentSchemaVersion = 1

    public enum Status: String, Sendable, Codable { case erased }

    public var schemaVersion: Int
    public var requestId: String
    public var service: String
    public var status: Status
    public var erasedAt: Date

    public init(requestId: String, service: String, status: Status = .erased, erasedAt: Date,
                schemaVersion: Int = currentSchemaVersion) {
        self.schemaVersion = schemaVersion
        self.requestId = requestId
        self.service = service
        self.status = status
        self.erasedAt = erasedAt
    }
}

/// The answer of `POST`, `GET` and `DELETE /account/deletion`.
///
/// `status`: `scheduled` (grace period, cancellable), `purging` (the services are erasing),
/// `completed` (every service erased: the receipt), `cancelled` (the answer of a cancel).
/// `services` lists each service's state once the purge started; a receipt holds no personal
/// data beyond `userIdHash` (hex SHA-256 of the user id).
public struct AccountDeletionResponse: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Codable { case scheduled, purging, completed, cancelled }

    public struct ServiceState: Sendable, Hashable, Codable {
        public enum State: String, Sendable, Codable { case pending, erased }
        public var service: String
        public var state: State
        public var erasedAt: Date?

        public init(service: String, state: State, erasedAt: Date? = nil) {
            self.service = service
            self.state = state
            self.erasedAt = erasedAt
        }
    }

    public var requestId: String
    public var status: Status
    public var requestedAt: Date?
    public var purgeAt: Date?
    public var completedAt: Date?
    public var userIdHash: String?
    public var services: [ServiceState]?

    public init(requestId: String, status: Status, requestedAt: Date? = nil, purgeAt: Date? = nil, completedAt: Date? = nil,
                userIdHash: String? = nil, services: [ServiceState]? = nil) {
        self.requestId = requestId
        self.status = status
        self.requestedAt = requestedAt
        self.purgeAt = purgeAt
        self.completedAt = completedAt
        self.userIdHash = userIdHash
        self.services = services
    }
}
