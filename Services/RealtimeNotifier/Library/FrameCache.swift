import Contracts
import WebSocketServer

/// The frame of one event, encoded once per serializer and shared by every subscriber's queue.
struct FrameCache {
    let event: SequencedChannelEvent
    let replayed: Bool
    private var v1: WebSocketFrame?
    private var v2: WebSocketFrame?

    init(event: SequencedChannelEvent, replayed: Bool) {
        self.event = event
        self.replayed = replayed
    }

    mutating func frame(_ channel: ChannelName, _ serializer: PhoenixSerializer) -> WebSocketFrame {
        switch serializer {
        case .v1:
            if let v1 { return v1 }
            let frame = WebSocketFrame(text: message(channel).encode(.v1))
            v1 = frame
            return frame
        case .v2:
            if let v2 { return v2 }
            let frame = WebSocketFrame(text: message(channel).encode(.v2))
            v2 = frame
            return frame
        }
    }

    private func message(_ channel: ChannelName) -> PhoenixMessage {
        .broadcast(topic: channel.topic, event: event.event, payload: event.payload, seq: event.seq, replayed: replayed)
    }
}
