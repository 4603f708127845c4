import HubTime
import Mongo

/// The distinct quiet-hours windows of the devices, in `quiet_windows`: one small document per window (`_id` its
/// topic) with the number of devices that have it, moved by `$inc` as devices set, change and clear their quiet
/// hours. A window whose count falls to 0 stays, ignored, and counts again if a device takes it up.
public struct QuietWindowDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.quietWindows)
    }

    /// Counts one more device in the window of `quietHours` (its topic `topic`), creating the window's document.
    /// - Throws: `DAOError`.
    public func add(_ quietHours: QuietHours, topic: String) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(topic)],
                [
                    "$inc": ["devices": .int64(1)],
                    "$setOnInsert": [
                        "from": .string(quietHours.fromText), "to": .string(quietHours.toText),
                        "tz": .string(quietHours.timeZoneID),
                    ],
                ],
                options: UpdateOptions(upsert: true))
        }
    }

    /// Counts one device fewer in the window whose topic is `topic`.
    /// - Throws: `DAOError`.
    public func remove(topic: String) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(topic), "devices": ["$gt": .int64(0)]],
                ["$inc": ["devices": .int64(-1)]])
        }
    }

    /// Every window that some device has, the most devices first (then by topic): one read of a small collection.
    /// - Throws: `DAOError`.
    public func occupied() async throws -> [QuietWindow] {
        try await mapErrors { try await collection.find(["devices": ["$gt": .int64(0)]]) }
            .compactMap(QuietWindow.init(document:))
            .sorted { ($0.devices, $1.topic) > ($1.devices, $0.topic) }
    }
}
