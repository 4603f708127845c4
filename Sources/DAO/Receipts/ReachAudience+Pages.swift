import Mongo

/// A message's audience read a page at a time between marks (`ReachAudience.marks`): each read names a range of
/// devices holding about `ReachAudience.pageSpan` of them, so the server reads that many documents, whatever the
/// audience's size (a sort with a limit may read every match first: SecantusDB does).
extension ReachAudience {
    /// Devices between two marks.
    public static let pageSpan = 200

    /// Every `pageSpan`-th device of `devices` (sorted): the upper bounds of the audience's pages.
    public static func marks(of devices: [ObjectID]) -> [ObjectID] {
        let sorted = devices.sorted { $0.hex < $1.hex }
        return stride(from: pageSpan - 1, to: sorted.count, by: pageSpan).map { sorted[$0] }
    }

    /// The mark that bounds the read of `spans` pages (at least one) after `device` (nil: the read goes to the end,
    /// unbounded).
    public func mark(after device: ObjectID?, spans: Int = 1) -> ObjectID? {
        let first =
            device.map { device in marks.firstIndex { $0.hex > device.hex } ?? marks.endIndex } ?? marks.startIndex
        let index = first + max(spans, 1) - 1
        return index < marks.endIndex ? marks[index] : nil
    }
}

extension SubscriptionDAO {
    /// Every device that wants `topic` now (the audience to mark into pages), read once.
    /// - Throws: `DAOError`.
    public func audienceDevices(of topic: String) async throws -> [ObjectID] {
        try await mapErrors {
            try await collection.find(
                ["topic": .string(topic), "want": true, "gone": ["$ne": true]],
                options: FindOptions(projection: ["device": 1]))
        }.compactMap { $0.objectID("device") }
    }

    /// The devices that want `topic` after `after` up to `through` (nil: no bound), in device order, with their
    /// platforms: one range of the `topic.device` index (the wish's state is checked here, not in the filter, so
    /// that the server reads the range alone).
    /// - Throws: `DAOError`.
    public func audienceRange(of topic: String, after: ObjectID?, through: ObjectID?) async throws
        -> [(device: ObjectID, platform: Platform)]
    {
        var range: BSONDocument = [:]
        if let after { range["$gt"] = .objectID(after) }
        if let through { range["$lte"] = .objectID(through) }
        var filter: BSONDocument = ["topic": .string(topic)]
        if !range.isEmpty { filter["device"] = .document(range) }
        let documents = try await mapErrors {
            try await collection.find(
                filter,
                options: FindOptions(projection: [
                    "device": 1, "platform": 1,
                    "want": 1, "gone": 1,
                ]))
        }
        return documents.compactMap { document -> (device: ObjectID, platform: Platform)? in
            guard document["want"]?.boolValue == true, document["gone"]?.boolValue != true,
                let device = document.objectID("device")
            else { return nil }
            return (device, Platform(rawValue: document.string("platform")) ?? .android)
        }.sorted { $0.device.hex < $1.device.hex }
    }
}

extension DeliveryDAO {
    /// The devices of every delivery of `message` (the audience to mark into pages), read once.
    /// - Throws: `DAOError`.
    public func audienceDevices(of message: ObjectID) async throws -> [ObjectID] {
        try await mapErrors {
            try await deliveries.find(Self.range(of: message), options: FindOptions(projection: ["device": 1]))
        }.compactMap { $0.objectID("device") }
    }

    /// `message`'s deliveries to devices after `after` up to `through` (nil: no bound), in `_id` (device) order: one
    /// range of the `message._id` index.
    /// - Throws: `DAOError`.
    public func range(of message: ObjectID, after: ObjectID?, through: ObjectID?) async throws -> [Delivery] {
        var filter = Self.range(of: message, after: after.map { Delivery.id(message: message, device: $0) })
        if let through {
            var bounds = filter["_id"]?.documentValue ?? [:]
            bounds["$lte"] = .string(Delivery.id(message: message, device: through))
            filter["_id"] = .document(bounds)
        }
        return try await mapErrors { try await deliveries.find(filter) }.compactMap(Delivery.init(document:))
            .sorted { $0.id < $1.id }
    }
}
