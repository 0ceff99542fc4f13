import Contracts
import Foundation
import Kafka
import Postgres
import Projection

/// The room catalog as `backbone rebuild catalog` re-projects it: the catalog's own topics and
/// the remixes of `room.interactions.v1`, whose forks the social projection (consumer group
/// `room-social`) writes into `catalog_rooms` and `catalog_versions` live. Every other record
/// of that topic is the social read models' alone and is passed over here.
public struct CatalogWithForksProjection: Projection {
    public enum Event: Sendable, Equatable {
        case catalog(CatalogProjection.Event)
        case fork(RoomInteraction)
        case ignored
    }
    public typealias Effects = Void

    let catalog: CatalogProjection
    let interactionsTopic: String

    public init(catalog: CatalogProjection, interactionsTopic: String = Topics.roomInteractions) {
        self.catalog = catalog
        self.interactionsTopic = interactionsTopic
    }

    public func decode(_ record: KafkaConsumerRecord) throws -> Event {
        guard record.topic == interactionsTopic else { return .catalog(try catalog.decode(record)) }
        let interaction = try ContractCoding.decode(RoomInteraction.self, from: record.value)
        guard interaction.kind == .remixCreated else { return .ignored }
        try SocialProjection.validate(interaction)
        return .fork(interaction)
    }

    /// The batch's catalog records and forks, applied together by the catalog (which merges a
    /// version's request and statuses whatever their order, and leaves an erased owner's out).
    public func apply(_ events: [ProjectedEvent<Event>], in connection: PostgresConnection) async throws {
        var catalogEvents: [ProjectedEvent<CatalogProjection.Event>] = []
        for item in events {
            switch item.event {
            case .catalog(let event):
                catalogEvents.append(ProjectedEvent(event: event, topic: item.topic, partition: item.partition, offset: item.offset))
            case .fork(let remix):
                for event in try await SocialProjection.forkEvents(remix, connection) {
                    catalogEvents.append(ProjectedEvent(event: event, topic: item.topic, partition: item.partition, offset: item.offset))
                }
            case .ignored:
                continue
            }
        }
        guard !catalogEvents.isEmpty else { return }
        try await catalog.apply(catalogEvents, in: connection)
    }

    public func afterCommit(_ effects: Void) async throws {}
}
