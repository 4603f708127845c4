import Mongo

extension SubscriptionDAO {
    /// Up to `limit` devices that want `topic` and that FCM still knows (not gone, not dormant), after the device
    /// `after`, in device order (the `topic.device` index), with their platforms: a page of the devices a topic
    /// message reaches, the audience an acknowledgement is asked of.
    /// - Throws: `DAOError`.
    public func reachedPage(of topic: String, after: ObjectID?, limit: Int) async throws
        -> [(device: ObjectID, platform: Platform)]
    {
        try await audiencePage(of: topic, after: after, limit: limit, dormant: false)
    }
}

extension DeviceDAO {
    /// The devices of `ids` as they are now (id, registration, platform, state, person, locale, quiet hours; never the
    /// secret's hash), by
    /// id, `IDChunks.perCommand` a query: whom a re-send goes to. A deleted device is missing.
    /// - Throws: `DAOError`.
    public func devices(_ ids: [ObjectID]) async throws -> [ObjectID: Device] {
        var found: [ObjectID: Device] = [:]
        let fields: BSONDocument = [
            "registration": 1, "platform": 1, "state": 1, "person": 1, "locale": 1,
            "quiet_hours": 1,
        ]
        for chunk in IDChunks.of(ids) {
            let documents = try await mapErrors {
                try await collection.find(
                    ["_id": ["$in": .array(chunk.map(BSONValue.objectID))]],
                    options: FindOptions(projection: fields))
            }
            for device in documents.compactMap(Device.init(document:)) { found[device.id] = device }
        }
        return found
    }
}
