import Mongo

extension SubscriptionDAO {
    /// For each of `registrations`, its wishes for `topics`, either way and with their turns (a receipt's proof
    /// that its device was in the audience of a message of them); a registration with none is absent. The devices
    /// of many requests at once: one query per 64 registrations, on the `registration.topic` index.
    /// - Throws: `DAOError`.
    public func wishes(of registrations: [String], for topics: [String]) async throws
        -> [String: [String: WishRecord]]
    {
        guard !topics.isEmpty else { return [:] }
        var found: [String: [String: WishRecord]] = [:]
        for chunk in IDChunks.of(Array(Set(registrations))) {
            let documents = try await mapErrors {
                try await collection.find(
                    [
                        "registration": ["$in": .array(chunk.map(BSONValue.string))],
                        "topic": ["$in": .array(topics.map(BSONValue.string))],
                    ],
                    options: FindOptions(projection: [
                        "registration": 1, "topic": 1, "want": 1,
                        "turns": 1,
                    ]))
            }
            for document in documents {
                guard let registration = document["registration"]?.stringValue,
                    let topic = document["topic"]?.stringValue
                else { continue }
                found[registration, default: [:]][topic] = WishRecord(document: document)
            }
        }
        return found
    }

    /// How many devices want `topic`, per platform, and how many of those FCM called gone (dormant): a topic
    /// message's audience and its unreachable part. One aggregation on the `topic.device` index.
    /// - Throws: `DAOError`.
    public func audience(of topic: String) async throws -> [Platform: (devices: Int, dormant: Int)] {
        let rows = try await mapErrors {
            try await collection.aggregate([
                ["$match": ["topic": .string(topic), "want": true, "gone": ["$ne": true]]],
                [
                    "$group": [
                        "_id": ["platform": "$platform", "dormant": ["$eq": ["$dormant", true]]],
                        "n": ["$sum": 1],
                    ]
                ],
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
        -> [(device: ObjectID, platform: Platform)]
    {
        var filter: BSONDocument = ["topic": .string(topic), "want": true, "gone": ["$ne": true]]
        if !dormant { filter["dormant"] = ["$ne": true] }
        if let after { filter["device"] = ["$gt": .objectID(after)] }
        let documents = try await mapErrors {
            try await collection.find(
                filter,
                options: FindOptions(
                    projection: ["device": 1, "platform": 1],
                    sort: ["device": 1], limit: Int64(max(limit, 1))))
        }
        return documents.compactMap { document in
            guard let device = document.objectID("device") else { return nil }
            return (device, Platform(rawValue: document.string("platform")) ?? .android)
        }
    }
}
