import Mongo

/// The numbering of a group's messages for unread counts: `unread_sequences` holds each group's last number (`s`)
/// and its newest keys (`k`, in the order numbered), `unread_messages` a message's numbers per group. A number is
/// taken by one update conditional on the key not being there yet (`$inc` and `$push` together), then read back: the
/// key's place among the newest keys gives its number, so a fan-out resumed, or two numbered at once, each get their
/// own, once. Never a `findAndModify`.
extension PersonUnreadDAO {
    /// The numbers of message `key` in `groups`: those it has, and for the others a new number each, recorded.
    /// `numberedBefore` false: the message is on its first attempt and has none yet (they are not read first).
    /// - Throws: `DAOError`.
    public func numbers(ofMessage key: ObjectID, in groups: [String], numberedBefore: Bool = true) async throws
        -> [String: Int64]
    {
        var numbers = numberedBefore ? try await self.numbers(ofMessage: key) : [:]
        let missing = groups.filter { numbers[$0] == nil }
        guard !missing.isEmpty else { return numbers }
        var taken: [(String, Int64)] = []
        for group in missing { taken.append((group, try await number(key, in: group))) }
        numbers.merge(taken) { $1 }
        let fields = BSONDocument(taken.map { (key: "n.\(Self.groupKey($0.0))", value: .int64($0.1)) })
        _ = try await mapErrors {
            try await messages.updateOne(
                ["_id": .objectID(key)], ["$set": .document(fields)], options: UpdateOptions(upsert: true))
        }
        return numbers
    }

    /// The numbers message `key` has per group (none: empty).
    /// - Throws: `DAOError`.
    public func numbers(ofMessage key: ObjectID) async throws -> [String: Int64] {
        let document = try await mapErrors { try await messages.findOne(["_id": .objectID(key)]) }
        var numbers: [String: Int64] = [:]
        for (field, value) in document?["n"]?.documentValue ?? [:] {
            if let number = value.int64Value { numbers[Self.group(ofKey: field)] = number }
        }
        return numbers
    }

    /// The last numbers of `groups` (a group never numbered is left out).
    /// - Throws: `DAOError`.
    public func numbers(of groups: [String]) async throws -> [String: Int64] {
        guard !groups.isEmpty else { return [:] }
        let filter: BSONDocument =
            groups.count == 1
            ? ["_id": .string(groups[0])] : ["_id": ["$in": .array(groups.map(BSONValue.string))]]
        let documents = try await mapErrors {
            try await sequences.find(filter, options: FindOptions(projection: ["s": 1]))
        }
        var numbers: [String: Int64] = [:]
        for document in documents {
            if let group = document["_id"]?.stringValue, let number = document["s"]?.int64Value {
                numbers[group] = number
            }
        }
        return numbers
    }

    /// Message `key`'s number in `group`: taken once (`$inc` with the key pushed, unless it is there), then read back.
    private func number(_ key: ObjectID, in group: String) async throws -> Int64 {
        let hex = BSONValue.string(key.hex)
        for _ in 0..<3 {
            let taken = try await mapErrors {
                try await sequences.updateOne(
                    ["_id": .string(group), "k": ["$ne": hex]],
                    [
                        "$inc": ["s": 1],
                        "$push": ["k": ["$each": [hex], "$slice": .int64(-Int64(Self.keptSequenceKeys))]],
                    ])
            }
            if taken.matchedCount == 0 {
                // The group's first message, or this key numbered already.
                let first = try await mapErrors {
                    try await sequences.insertManyIgnoringDuplicates([["_id": .string(group), "s": 1, "k": [hex]]])
                }
                if first.isEmpty { return 1 }
            }
            let document = try await mapErrors { try await sequences.findOne(["_id": .string(group)]) }
            if let document, let last = document["s"]?.int64Value,
                let keys = document["k"]?.arrayValue?.compactMap(\.stringValue),
                let place = keys.lastIndex(of: key.hex)
            {
                return last - Int64(keys.count - 1 - place)
            }
        }
        throw DAOError(.database, "the message's number in its group could not be read back")
    }
}
