import Mongo

extension DeliveryDAO {
    /// Which of `messages` have a delivery to `device`: messages the device was sent, whoever it belongs to now
    /// (a receipt's proof that the device could have received them). Read by `_id`, `IDChunks.perCommand` a command.
    /// - Throws: `DAOError`.
    public func delivered(_ messages: [ObjectID], to device: ObjectID) async throws -> Set<ObjectID> {
        var found: Set<ObjectID> = []
        for chunk in IDChunks.of(messages) {
            let ids = chunk.map { BSONValue.string(Delivery.id(message: $0, device: device)) }
            let documents = try await mapErrors {
                try await deliveries.find(
                    ["_id": ["$in": .array(ids)]], options: FindOptions(projection: ["message": 1]))
            }
            for document in documents { if let message = document.objectID("message") { found.insert(message) } }
        }
        return found
    }
}
