import Mongo

extension SubscriptionDAO {
    /// Which of `topics` `device`'s registration has a wish for, either way: topics it receives or received before it
    /// opted out (a receipt's proof that it could have received a message of them). One query on the
    /// `registration.topic` index.
    /// - Throws: `DAOError`.
    public func topics(everWishedBy device: Device, among topics: [String]) async throws -> Set<String> {
        guard !topics.isEmpty else { return [] }
        let documents = try await mapErrors {
            try await collection.find(["registration": .string(device.registration),
                                       "topic": ["$in": .array(topics.map(BSONValue.string))]],
                                      options: FindOptions(projection: ["topic": 1]))
        }
        return Set(documents.compactMap { $0["topic"]?.stringValue })
    }

    /// How many devices want `topic`, per platform, and how many of those FCM called gone (dormant): a topic
    /// message's audience and its unreachable part. One aggregation on the `topic.device` index.
    /// - Throws: `DAOError`.
    public func audience(of topic: String) async throws -> [Platform: (devices: Int, dormant: Int)] {
        let rows = try await mapErrors {
            try await collection.aggregate([
                ["$match": ["topic": .string(topic), "want": true, "gone": ["$ne": true]]],
                ["$group": ["_id": ["platform": "$platform", "dormant": ["$eq": ["$dormant", true]]],
                            "n": ["$sum": 1]]],
            ])
        }
        var result: [Platform: (devices: Int, dormant: Int)] = [:]
        for row in rows {
            guard let key = row["_id"]?.documentValue, let platform = Platform(rawValue: key.string("platform")) else {
                continue
            }
            let n = Int(row["n"]?.int64Value ?? 0)
            var counts = result[platform] ?? (0, 0)
            counts.devices += n
            if key["dormant"]?.boolValue == true { counts.dormant += n }
            result[platform] = counts
        }
        return result
    }

    /// Up to `limit` devices that want `topic`, after the device `after`, in device order (the `topic.device`
    /// index), with their platforms: a page of a topic message's audience (without the dormant devices unless
    /// `dormant`).
    /// - Throws: `DAOError`.
    public func audiencePage(of topic: String, after: ObjectID?, limit: Int, dormant: Bool = true) async throws
        -> [(device: ObjectID, platform: Platform)] {
        var filter: BSONDocument = ["topic": .string(topic), "want": true, "gone": ["$ne": true]]
        if !dormant { filter["dormant"] = ["$ne": true] }
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
