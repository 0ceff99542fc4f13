/// A consumer group and the topics it reads.
public struct ConsumerGroup: Sendable, Hashable {
    public let groupID: String
    public let topics: [String]

    public init(groupID: String, topics: [String]) {
        self.groupID = groupID
        self.topics = topics
    }
}

/// Told when a consumer group's member starts (before the group has formed), when the group
/// formed (the member was given its partitions and found their stored positions) and when the
/// member stops. A host that needs to know which groups run sets one (`backbone dev` waits for
/// them before it stops its embedded broker); a service sets none.
public protocol ConsumerGroupObserver: Sendable {
    /// A member of `group` started; the returned token is passed to `memberStopped`.
    func memberStarted(_ group: ConsumerGroup) -> UInt64
    func groupAssigned(_ groupID: String)
    func memberStopped(_ token: UInt64)
}
