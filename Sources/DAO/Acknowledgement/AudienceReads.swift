import Mongo

extension SubscriptionDAO {
    /// Up to `limit` devices that want `topic` and that FCM still knows (not gone, not dormant), after the device
    /// `after`, in device order (the `topic.device` index), with their platforms: a page of the devices a topic
    /// message reaches, the audience an acknowledgement is asked of.
    /// - Throws: `DAOError`.
    public func reachedPage(of topic: String, after: ObjectID?, limit: Int) async throws
        -> [(device: ObjectID, platform: Platform)] {
        var filter: BSONDocument = ["topic": .string(topic), "want": true, "gone": ["$ne": true],
                                    "dormant": ["$ne": true]]
        if let after { filter["device"] = ["$gt": .objectID(after)] }
        let documents = try await mapErrors {
            try await collection.find(filter, options: FindOptions(projection: ["device": 1, "platform": 1],
                                                                   sort: ["device": 1], limit: Int64(max(limit, 1))))
        }
        return documents.compactMap { document in
            guard let device = document.objectID("device") else { return nil }
            return (device, Platform(rawValue: document.string("platform")) ?? .android)
        }
    }
}

extension DeviceDAO {
    /// The devices of `ids` as they are now (id, registration, platform, state, person, locale, quiet hours; never the
    /// secret's hash), by
    /// id, `IDChunks.perCommand` a query: whom a re-send goes to. A deleted device is missing.
    /// - Throws: `DAOError`.
    public func devices(_ ids: [ObjectID]) async throws -> [ObjectID: Device] {
        var found: [ObjectID: Device] = [:]
        let fields: BSONDocument = ["registration": 1, "platform": 1, "state": 1, "person": 1, "locale": 1,
                                    "quiet_hours": 1]
        for chunk in IDChunks.of(ids) {
            let documents = try await mapErrors {
                try await collection.find(["_id": ["$in": .array(chunk.map(BSONValue.objectID))]],
                                          options: FindOptions(projection: fields))
            }
            for device in documents.compactMap(Device.init(document:)) { found[device.id] = device }
        }
        return found
    }
}
