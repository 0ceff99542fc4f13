import Contracts

/// The text of one event, encoded once per serializer for every subscriber.
struct FrameCache {
    let event: SequencedChannelEvent
    let replayed: Bool
    private var v1: String?
    private var v2: String?

    init(event: SequencedChannelEvent, replayed: Bool) {
        self.event = event
        self.replayed = replayed
    }

    mutating func text(_ channel: ChannelName, _ serializer: PhoenixSerializer) -> String {
        switch serializer {
        case .v1:
            if let v1 { return v1 }
            let text = message(channel).encode(.v1)
            v1 = text
            return text
        case .v2:
            if let v2 { return v2 }
            let text = message(channel).encode(.v2)
            v2 = text
            return text
        }
    }

    private func message(_ channel: ChannelName) -> PhoenixMessage {
        .broadcast(topic: channel.topic, event: event.event, payload: event.payload, seq: event.seq, replayed: replayed)
    }
}
