import HubTime
import Mongo

extension DeviceDAO {
    /// Sets a device's quiet hours and the topic of their window (nil: clears them), and returns the device as it was
    /// before and as it is now (the caller moves its quiet-window count and topic). A read by `_id`, then one update
    /// by `_id` that lands only while the window's topic is still the one read (a change in between makes it read
    /// again), so two changes at once each see the other's result: never a `findAndModify`, which the embedded
    /// database answers by reading the whole collection.
    /// - Throws: `DAOError` `.deviceNotFound`, `.unavailable` when other changes kept winning (try again).
    public func setQuietHours(_ id: ObjectID, _ quietHours: QuietHours?, topic: String?) async throws
        -> (before: Device, after: Device)
    {
        let time = now()
        let update: BSONDocument
        if let quietHours, let topic {
            update = [
                "$set": [
                    "quiet_hours": [
                        "from": .string(quietHours.fromText), "to": .string(quietHours.toText),
                        "tz": .string(quietHours.timeZoneID), "topic": .string(topic),
                    ],
                    "updated_at": .int64(time),
                ]
            ]
        } else {
            update = ["$unset": ["quiet_hours": ""], "$set": ["updated_at": .int64(time)]]
        }
        var read: Device?
        for _ in 0..<5 {
            let before = try await get(id)
            let topic: BSONValue = before.quietTopic.map(BSONValue.string) ?? ["$exists": false]
            let matched = try await mapErrors {
                try await collection.updateOne(["_id": .objectID(id), "quiet_hours.topic": topic], update).matchedCount
            }
            if matched > 0 { read = before; break }
        }
        guard let before = read else {
            throw DAOError(.unavailable, "the quiet hours of \(id.hex) changed while they were being set: try again")
        }
        var after = before
        after.quietHours = topic == nil ? nil : quietHours
        after.quietTopic = quietHours == nil ? nil : topic
        return (before, after)
    }
}
