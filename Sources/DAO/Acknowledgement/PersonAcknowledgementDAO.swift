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
    public func record(
        message: ObjectID, person: String, device: ObjectID, at: Int64, response: String? = nil
    ) async throws -> Bool {
        var document: BSONDocument = [
            "_id": .string(Self.id(message: message, person: person)), "message": .objectID(message),
            "person": .string(person), "device": .objectID(device), "at": .int64(at),
            "stored_at": .int64(now()),
        ]
        if let response { document["response"] = .string(response) }
        do {
            try await mapErrors { _ = try await collection.insertOne(document) }
            return true
        } catch let error as DAOError where error.code == .duplicate {
            return false
        }
    }

    /// What an answer to a message that lets people change theirs came to.
    public enum Change: Sendable, Equatable {
        /// The person had not answered: nothing is stored (the first answer is recorded as any other).
        case first
        /// The person's answer was `previous` (nil: none given) and is now the new one.
        case changed(previous: String?)
        /// The person's answer was this one already.
        case same
    }

    /// Makes `response` `person`'s current answer to `message` (given on `device` at `at`) when they answered
    /// before: one read by `_id`, then one update by `_id` conditional on the answer read (a concurrent change wins
    /// or loses whole, and is read again).
    /// - Throws: `DAOError`.
    public func change(message: ObjectID, person: String, device: ObjectID, response: String?, at: Int64)
        async throws -> Change
    {
        let id = Self.id(message: message, person: person)
        for _ in 0..<3 {
            guard
                let stored = try await mapErrors({
                    try await collection.findOne(["_id": .string(id)], projection: ["response": 1])
                })
            else { return .first }
            let previous = stored["response"]?.stringValue
            if previous == response { return .same }
            var set: BSONDocument = ["device": .objectID(device), "at": .int64(at), "stored_at": .int64(now())]
            set["response"] = response.map(BSONValue.string) ?? .null
            let filter: BSONDocument = [
                "_id": .string(id), "response": previous.map(BSONValue.string) ?? ["$in": [.null]],
            ]
            let result = try await mapErrors { try await collection.updateOne(filter, ["$set": .document(set)]) }
            if result.modifiedCount > 0 { return .changed(previous: previous) }
        }
        throw DAOError(.database, "the answer kept changing while it was being changed")
    }

    /// The persons' current answers to `message`, counted by response (those who gave none are not counted).
    /// - Throws: `DAOError`.
    public func responses(message: ObjectID) async throws -> [String: Int64] {
        let rows = try await mapErrors {
            try await collection.aggregate([
                ["$match": ["message": .objectID(message), "response": ["$type": "string"]]],
                ["$group": ["_id": "$response", "n": ["$sum": 1]]],
            ])
        }
        var counts: [String: Int64] = [:]
        for row in rows { if let response = row["_id"]?.stringValue { counts[response] = row["n"]?.int64Value ?? 0 } }
        return counts
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
