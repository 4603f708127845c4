import HubTime
import Mongo

/// A person's unread messages as counted: in all, and per group (rooms and groups they got messages through).
public struct UnreadCounts: Sendable, Equatable {
    public var total: Int
    public var groups: [String: Int]

    public init(total: Int = 0, groups: [String: Int] = [:]) {
        self.total = total
        self.groups = groups
    }
}

/// The messages to persons and groups each person has not read on any device, in `person_unread`: one document per
/// person (`_id` the person id) holding the count (`n`), the count per group (`g`, keys encoded by `groupKey`) and
/// the unread messages' keys with their group (`keys`, the last `keptKeys`). The fan-out counts a batch of persons
/// with one range read of their documents and one bulk write (an update per person, `$ne` the message's key, so a
/// fan-out resumed counts nobody twice); a read is one update conditional on the key being there.
public struct PersonUnreadDAO: Sendable {
    let collection: MongoCollection

    /// How many unread messages' keys a person's document keeps: past it the oldest are dropped, and reading one of
    /// them no longer lowers the count (the count stays a number; a person with more than this unread sees at least
    /// this many).
    static let keptKeys = 1_000

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.personUnread)
    }

    /// A group id as a field name of `g`: `.` (which a field path would read as nesting) as `%2E`, `%` as `%25`.
    static func groupKey(_ group: String) -> String {
        var key = ""
        for character in group {
            switch character {
            case "%": key += "%25"
            case ".": key += "%2E"
            default: key.append(character)
            }
        }
        return key
    }

    /// The group id of a field name of `g`.
    static func group(ofKey key: String) -> String {
        var group = ""
        var characters = Array(key)[...]
        while let character = characters.popFirst() {
            if character == "%", characters.count >= 2 {
                let code = String(characters.prefix(2))
                if code == "2E" || code == "25" {
                    group.append(code == "2E" ? "." : "%")
                    characters.removeFirst(2)
                    continue
                }
            }
            group.append(character)
        }
        return group
    }

    /// Counts message `key` unread for `persons`, each through the group `groupOf[person]` (nil: named); returns
    /// each person's counts once it is counted (as read before the write, plus this message).
    /// - Throws: `DAOError`.
    public func add(_ key: ObjectID, for groupOf: [String: String?]) async throws -> [String: UnreadCounts] {
        let persons = Array(groupOf.keys)
        let stored = try await counts(ofRange: persons)
        var result: [String: UnreadCounts] = [:]
        var updates: [UpdateStatement] = []
        var inserts: [BSONDocument] = []
        for person in persons {
            let group = groupOf[person] ?? nil
            // A fan-out resumed may count a person twice here (not in the database: the update's `$ne`): the badge
            // of that one send is one too high.
            var counts = stored[person] ?? UnreadCounts()
            counts.total += 1
            if let group { counts.groups[group, default: 0] += 1 }
            result[person] = counts
            let entry: BSONValue = ["k": .string(key.hex), "g": group.map(BSONValue.string) ?? .null]
            if stored[person] == nil {
                var document: BSONDocument = ["_id": .string(person), "n": 1, "keys": [entry]]
                if let group {
                    document["g"] = .document(BSONDocument([(key: Self.groupKey(group), value: .int64(1))]))
                }
                inserts.append(document)
            } else {
                updates.append(Self.counting(key, entry: entry, group: group, for: person))
            }
        }
        if !inserts.isEmpty {
            let refused = try await mapErrors { try await collection.insertManyIgnoringDuplicates(inserts) }
            // Made meanwhile by another message's fan-out: counted by an update instead.
            for index in refused {
                guard let person = inserts[index]["_id"]?.stringValue else { continue }
                let group = groupOf[person] ?? nil
                updates.append(
                    Self.counting(
                        key, entry: ["k": .string(key.hex), "g": group.map(BSONValue.string) ?? .null], group: group,
                        for: person))
            }
        }
        if !updates.isEmpty { _ = try await mapErrors { try await collection.bulkUpdate(updates) } }
        return result
    }

    /// The update that counts `key` (its `entry`) for `person` unless it is counted already.
    static func counting(_ key: ObjectID, entry: BSONValue, group: String?, for person: String) -> UpdateStatement {
        var increments: BSONDocument = ["n": 1]
        if let group { increments["g.\(groupKey(group))"] = 1 }
        return UpdateStatement(
            filter: ["_id": .string(person), "keys.k": ["$ne": .string(key.hex)]],
            update: [
                "$inc": .document(increments),
                "$push": ["keys": ["$each": [entry], "$slice": .int64(-Int64(keptKeys))]],
            ])
    }

    /// Marks message `key` read for `person`, when it was counted unread: one conditional update (through `group`,
    /// the group it was counted under, when the caller knows it; else the person's document is read for it first).
    /// Returns the person's counts after it, or nil when it was not unread (read already, or never counted).
    /// - Throws: `DAOError`.
    public func markRead(_ key: ObjectID, for person: String, group: String??) async throws -> UnreadCounts? {
        var group = group
        if group == nil {
            let document = try await mapErrors {
                try await collection.findOne(
                    ["_id": .string(person), "keys.k": .string(key.hex)], projection: ["keys": 1])
            }
            guard let document else { return nil }
            let entry = document["keys"]?.arrayValue?.compactMap(\.documentValue).first {
                $0["k"]?.stringValue == key.hex
            }
            group = .some(entry?["g"]?.stringValue)
        }
        var decrements: BSONDocument = ["n": -1]
        if case .some(.some(let name)) = group { decrements["g.\(Self.groupKey(name))"] = -1 }
        let result = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(person), "keys.k": .string(key.hex)],
                ["$inc": .document(decrements), "$pull": ["keys": ["k": .string(key.hex)]]])
        }
        guard result.modifiedCount > 0 else { return nil }
        return try await counts(of: person)
    }

    /// `person`'s counts (none counted: zero).
    /// - Throws: `DAOError`.
    public func counts(of person: String) async throws -> UnreadCounts {
        let document = try await mapErrors {
            try await collection.findOne(["_id": .string(person)], projection: ["n": 1, "g": 1])
        }
        return document.map(Self.counts(from:)) ?? UnreadCounts()
    }

    /// The counts of a stored document, never below zero.
    static func counts(from document: BSONDocument) -> UnreadCounts {
        var groups: [String: Int] = [:]
        for (key, value) in document["g"]?.documentValue ?? [:] {
            let count = Int(value.int64Value ?? 0)
            if count > 0 { groups[group(ofKey: key)] = count }
        }
        return UnreadCounts(total: max(0, Int(document["n"]?.int64Value ?? 0)), groups: groups)
    }

    /// The stored counts of `persons`: one range of the `_id` index from the least of them to the
    /// greatest (in the database's byte order), the others left out here.
    private func counts(ofRange persons: [String]) async throws -> [String: UnreadCounts] {
        let wanted = Set(persons)
        guard let range = KeyRange.bounds(of: wanted) else { return [:] }
        let filter: BSONDocument = wanted.count == 1 ? ["_id": .string(persons[0])] : ["_id": range]
        let documents = try await mapErrors {
            try await collection.find(filter, options: FindOptions(projection: ["n": 1, "g": 1]))
        }
        var found: [String: UnreadCounts] = [:]
        for document in documents {
            guard let person = document["_id"]?.stringValue, wanted.contains(person) else { continue }
            found[person] = Self.counts(from: document)
        }
        return found
    }
}
