import Mongo

extension SubscriptionDAO {
    /// The devices that want `topic` and that FCM has subscribed to one of `quietTopics` (whatever the hub now
    /// wants of those: FCM leaves them out of a condition until the reconciler removes them), each with its quiet
    /// topic: the devices a topic message sent without `quietTopics` does not reach now. The quiet topics'
    /// registrations (`topic.device` index), then their wishes for `topic` (`registration.topic` index), 500
    /// registrations a query.
    /// - Throws: `DAOError`.
    ///
    /// With `held` (a held topic), the registrations FCM subscribed to it are left out.
    public func quietSubscribers(of topic: String, quietTopics: [String], leavingOut held: String? = nil) async throws
        -> [(subscription: TopicSubscription, quietTopic: String)]
    {
        guard !quietTopics.isEmpty else { return [] }
        let quiet = try await mapErrors {
            try await collection.find(
                [
                    "topic": ["$in": .array(quietTopics.map(BSONValue.string))], "applied": true,
                    "dormant": ["$ne": true],
                ],
                options: FindOptions(projection: ["registration": 1, "topic": 1]))
        }
        var quietTopicOf: [String: String] = [:]
        for document in quiet {
            guard let registration = document["registration"]?.stringValue,
                let quietTopic = document["topic"]?.stringValue
            else { continue }
            quietTopicOf[registration] = quietTopic
        }
        var found: [(subscription: TopicSubscription, quietTopic: String)] = []
        let registrations = Array(quietTopicOf.keys).sorted()
        for start in stride(from: 0, to: registrations.count, by: 500) {
            var chunk = Array(registrations[start..<min(start + 500, registrations.count)])
            if let held {
                let holding = try await mapErrors {
                    try await collection.find(
                        [
                            "topic": .string(held), "applied": true,
                            "registration": ["$in": .array(chunk.map(BSONValue.string))],
                        ],
                        options: FindOptions(projection: ["registration": 1]))
                }
                let left = Set(holding.compactMap { $0["registration"]?.stringValue })
                chunk.removeAll(where: left.contains)
                if chunk.isEmpty { continue }
            }
            let wishes = try await mapErrors {
                try await collection.find([
                    "topic": .string(topic), "want": true, "dormant": ["$ne": true],
                    "gone": ["$ne": true],
                    "registration": ["$in": .array(chunk.map(BSONValue.string))],
                ])
            }
            for subscription in wishes.compactMap(TopicSubscription.init(document:)) {
                if let quietTopic = quietTopicOf[subscription.registration] { found.append((subscription, quietTopic)) }
            }
        }
        return found
    }
}
