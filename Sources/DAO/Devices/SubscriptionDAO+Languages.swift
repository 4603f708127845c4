import Mongo

extension SubscriptionDAO {
    /// Points `device`'s registration at `topic`, the topic of its language (`LanguageTopic`; nil: none): wanted,
    /// and every other `lang-` topic of the registration unwanted, so the reconciler adds the new one at FCM and
    /// removes the old. One read (the `registration.topic` index); writes only where the wishes differ, so a
    /// registration whose language stays costs that read alone.
    /// - Throws: `DAOError`.
    public func setLanguage(_ topic: String?, for device: Device) async throws {
        let recorded = try await mapErrors {
            try await collection.find(
                [
                    "registration": .string(device.registration),
                    "topic": ["$regex": .string("^" + LanguageTopic.prefix)], "gone": ["$ne": true],
                ],
                options: FindOptions(projection: ["topic": 1, "want": 1]))
        }
        let wanted = recorded.filter { $0["want"]?.boolValue == true }.compactMap { $0["topic"]?.stringValue }
        // The new language first: a device between two is never left on none.
        if let topic, !wanted.contains(topic) { try await set(want: true, topics: [topic], for: device) }
        let stale = wanted.filter { $0 != topic }
        guard !stale.isEmpty else { return }
        try await setWant(
            false,
            where: [
                "registration": .string(device.registration),
                "topic": ["$in": .array(stale.map(BSONValue.string))],
            ])
    }

    /// Wants each device's topic where the registration has no wish for it yet (one recorded meanwhile decides),
    /// a thousand an insert: a page of the language rollout.
    /// - Throws: `DAOError`.
    public func wantNew(_ wishes: [(device: Device, topic: String)]) async throws {
        try await insertMissing(wishes.map { ($0.device, $0.topic) })
    }
}
