import Mongo

extension DeliveryDAO {
    /// Records that a topic message `message` reached `devices` (FCM accepted the topic send): one delivery each,
    /// `via: "topic"`, state `sent`, in unordered inserts of `perInsert` (a delivery stored already stays as it is).
    /// The audience an acknowledgement is asked of, fixed when the message is sent. Returns how many were new.
    /// - Throws: `DAOError`.
    @discardableResult
    public func recordTopic(message: ObjectID, devices: [(device: ObjectID, platform: Platform)]) async throws -> Int {
        let time = now()
        var stored = 0
        for start in stride(from: 0, to: devices.count, by: Self.perInsert) {
            let slice = devices[start..<min(start + Self.perInsert, devices.count)]
            let documents: [BSONDocument] = slice.map { device in
                [
                    "_id": .string(Delivery.id(message: message, device: device.device)), "message": .objectID(message),
                    "device": .objectID(device.device), "via": .string(Delivery.Via.topic.rawValue),
                    "platform": .string(device.platform.rawValue), "state": .string(Delivery.State.sent.rawValue),
                    "at": .int64(time),
                ]
            }
            let refused = try await mapErrors { try await deliveries.insertManyIgnoringDuplicates(documents) }
            stored += documents.count - refused.count
        }
        return stored
    }
}
