import Mongo

extension DeviceDAO {
    /// Gives device `id` a new person nonce: its hash and when it expires (Unix ms) in `person_nonce`, replacing
    /// the one it had. One update by `_id`.
    /// - Throws: `DAOError` `.deviceNotFound`.
    public func setPersonNonce(_ id: ObjectID, hash: String, expiresAt: Int64) async throws {
        let result = try await mapErrors {
            try await collection.updateOne(
                ["_id": .objectID(id)],
                [
                    "$set": [
                        "person_nonce": ["hash": .string(hash), "expires_at": .int64(expiresAt)]
                    ]
                ])
        }
        guard result.matchedCount > 0 else { throw DAOError(.deviceNotFound, "no device has the id \(id.hex)") }
    }

    /// Takes device `id`'s person nonce when `hash` is its hash and it has not expired at `now` (Unix ms): true once,
    /// the nonce removed in the same update by `_id`; false when it is another, used or expired.
    /// - Throws: `DAOError`.
    public func takePersonNonce(_ id: ObjectID, hash: String, now: Int64) async throws -> Bool {
        let result = try await mapErrors {
            try await collection.updateOne(
                [
                    "_id": .objectID(id), "person_nonce.hash": .string(hash),
                    "person_nonce.expires_at": ["$gt": .int64(now)],
                ],
                ["$unset": ["person_nonce": ""]])
        }
        return result.modifiedCount > 0
    }

    /// The devices bound to `person` (id, platform, state, created and updated times; never the registration or
    /// the secret's hash), oldest first, on the `person` index.
    /// - Throws: `DAOError`.
    public func devices(ofPerson person: String) async throws -> [Device] {
        let fields: BSONDocument = [
            "registration": 1, "platform": 1, "state": 1, "person": 1, "created_at": 1,
            "updated_at": 1,
        ]
        return try await mapErrors {
            try await collection.find(["person": .string(person)], options: FindOptions(projection: fields))
        }.compactMap(Device.init(document:)).sorted { ($0.createdAt, $0.id.hex) < ($1.createdAt, $1.id.hex) }
    }

    /// Unbinds device `id` from `person` (any person when nil) when it is bound to them: true when it was, false
    /// when it is not (or no device has the id). One update by `_id`.
    /// - Throws: `DAOError`.
    public func unbind(_ id: ObjectID, fromPerson person: String?) async throws -> Bool {
        let result = try await mapErrors {
            try await collection.updateOne(
                ["_id": .objectID(id), "person": person.map(BSONValue.string) ?? ["$exists": true]],
                ["$unset": ["person": ""], "$set": ["updated_at": .int64(now())]])
        }
        return result.modifiedCount > 0
    }
}
