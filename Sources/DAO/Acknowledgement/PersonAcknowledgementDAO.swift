import HubTime
import Mongo

/// Which persons acknowledged a message to persons and groups, in `person_acknowledgements`: one document per
/// (message, person), `_id` "<message _id hex>/<person>", inserted by the first acknowledgement on any of the person's
/// devices. A message to persons is acknowledged by a person, not a device: the escalation leaves every device of a
/// person who answered alone, the reach report counts persons, and the person's other devices are told.
public struct PersonAcknowledgementDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// A message's acknowledging persons, counted from the index alone (the reach report).
    static let indexes = [IndexModel(keys: ["message": 1], name: "message")]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.personAcknowledgements)
        self.now = now
    }

    /// The `_id` of `person`'s acknowledgement of `message`.
    static func id(message: ObjectID, person: String) -> String { "\(message.hex)/\(person)" }

    /// Records that `person` acknowledged `message` on `device` at `at` (the device's clock); true when this is the
    /// person's first acknowledgement of it (false: they had answered on another device, or this one, before).
    /// - Throws: `DAOError`.
    public func record(message: ObjectID, person: String, device: ObjectID, at: Int64) async throws -> Bool {
        do {
            try await mapErrors {
                _ = try await collection.insertOne([
                    "_id": .string(Self.id(message: message, person: person)), "message": .objectID(message),
                    "person": .string(person), "device": .objectID(device), "at": .int64(at),
                    "stored_at": .int64(now()),
                ])
            }
            return true
        } catch let error as DAOError where error.code == .duplicate {
            return false
        }
    }

    /// Which of `persons` acknowledged `message`. Read by `_id`, `IDChunks.perCommand` persons a command.
    /// - Throws: `DAOError`.
    public func acknowledged(message: ObjectID, persons: [String]) async throws -> Set<String> {
        var found: Set<String> = []
        for chunk in IDChunks.of(Array(Set(persons))) {
            let ids = chunk.map { BSONValue.string(Self.id(message: message, person: $0)) }
            let documents = try await mapErrors {
                try await collection.find(
                    ["_id": ["$in": .array(ids)]], options: FindOptions(projection: ["person": 1]))
            }
            for document in documents { if let person = document["person"]?.stringValue { found.insert(person) } }
        }
        return found
    }

    /// How many persons acknowledged `message`.
    /// - Throws: `DAOError`.
    public func count(message: ObjectID) async throws -> Int64 {
        try await mapErrors { try await collection.countDocuments(["message": .objectID(message)]) }
    }
}
