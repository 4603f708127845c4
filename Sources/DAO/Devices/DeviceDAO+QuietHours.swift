import HubTime
import Mongo

extension DeviceDAO {
    /// Sets a device's quiet hours and the topic of their window (nil: clears them), in one atomic update, and
    /// returns the device as it was before and as it is now (the caller moves its quiet-window count and topic).
    /// - Throws: `DAOError` `.deviceNotFound`.
    public func setQuietHours(_ id: ObjectID, _ quietHours: QuietHours?, topic: String?) async throws
        -> (before: Device, after: Device) {
        let time = now()
        let update: BSONDocument
        if let quietHours, let topic {
            update = ["$set": ["quiet_hours": ["from": .string(quietHours.fromText), "to": .string(quietHours.toText),
                                               "tz": .string(quietHours.timeZoneID), "topic": .string(topic)],
                               "updated_at": .int64(time)]]
        } else {
            update = ["$unset": ["quiet_hours": ""], "$set": ["updated_at": .int64(time)]]
        }
        let document = try await mapErrors { 
            try await collection.findOneAndUpdate(["_id": .objectID(id)], update,
                                                  options: FindOneAndUpdateOptions(returnNew: false))
        }
        guard let document, let before = Device(document: document) else {
            throw DAOError(.deviceNotFound, "no device has the id \(id.hex)")
        }
        var after = before
        after.quietHours = topic == nil ? nil : quietHours
        after.quietTopic = quietHours == nil ? nil : topic
        return (before, after)
    }
}
