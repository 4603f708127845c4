import HubTime
import Mongo

/// The messages to persons and groups each person has not read on any device, counted without a write per person a
/// message (`UNREAD_COUNTS`).
///
/// A group's messages are numbered as the fan-out sends them (`unread_sequences`, one document a group; the numbers of
/// a message in `unread_messages`), and each person keeps, per group, what they read of them (`person_unread`, one
/// document a person: `t.<group>` = `{m: mark, r: [read after the mark]}`): the person's unread in a group is the
/// group's number less the mark and the numbers read. A fan-out to a group writes once a message (its number), reads
/// each batch of persons as one range, and writes only for a person it meets in the group the first time (their mark
/// set before this message). A read is one conditional update. Messages named to a person (not through a group) are
/// counted per person (`d`, the keys in `k`), as such sends are few.
///
/// A person leaving a group loses their thread (`forget`): coming back, they count from their next message.
public struct PersonUnreadDAO: Sendable {
    let persons: MongoCollection
    let sequences: MongoCollection
    let messages: MongoCollection

    /// A batch of persons' documents is one range of this index (`p` = `_id`): the embedded database reads a range
    /// of `_id` by scanning the collection.
    static let indexes = [IndexModel(keys: ["p": 1], name: "p")]

    /// How many keys of messages named to a person their document keeps: past it the oldest are dropped, and reading
    /// one of them no longer lowers the count.
    static let keptKeys = 100

    /// How many of a group's newest message keys its sequence document keeps: what tells a number taken by a message
    /// (a fan-out resumed, or two messages numbered at once) apart.
    static let keptSequenceKeys = 32

    /// How many numbers read out of order a thread keeps past its mark: a person reading older messages out of order
    /// past it no longer lowers their count for those.
    static let keptReads = 200

    public init(database: MongoDatabase) {
        self.persons = database.collection(CollectionName.personUnread)
        self.sequences = database.collection(CollectionName.unreadSequences)
        self.messages = database.collection(CollectionName.unreadMessages)
    }

    /// A group id as a field name: `.` (which a field path would read as nesting) as `%2E`, `%` as `%25`, and a
    /// leading `$` as `%24`.
    static func groupKey(_ group: String) -> String {
        var key = ""
        for character in group {
            switch character {
            case "%": key += "%25"
            case ".": key += "%2E"
            case "$" where key.isEmpty: key += "%24"
            default: key.append(character)
            }
        }
        return key
    }

    /// The group id of a field name made by `groupKey`.
    static func group(ofKey key: String) -> String {
        var group = ""
        var characters = Array(key)[...]
        while let character = characters.popFirst() {
            if character == "%", characters.count >= 2 {
                let code = String(characters.prefix(2))
                let decoded: Character? = ["2E": ".", "25": "%", "24": "$"][code]
                if let decoded {
                    group.append(decoded)
                    characters.removeFirst(2)
                    continue
                }
            }
            group.append(character)
        }
        return group
    }

    // MARK: Persons

    /// What the persons' documents hold: their direct count and their threads.
    static let stateFields: BSONDocument = ["d": 1, "t": 1]

    /// The state of a stored document.
    static func state(of document: BSONDocument) -> PersonUnread {
        var threads: [String: UnreadThread] = [:]
        for (key, value) in document["t"]?.documentValue ?? [:] {
            guard let thread = value.documentValue, let mark = thread["m"]?.int64Value else { continue }
            threads[group(ofKey: key)] = UnreadThread(
                mark: mark, read: thread["r"]?.arrayValue?.compactMap(\.int64Value) ?? [])
        }
        return PersonUnread(direct: Int(document["d"]?.int64Value ?? 0), threads: threads)
    }

    /// The stored states of `persons` (a person with none is left out): one range of the `p` index from the least of
    /// them to the greatest (in the database's byte order), the others in it left out here.
    /// - Throws: `DAOError`.
    func states(of persons: [String]) async throws -> [String: PersonUnread] {
        let wanted = Set(persons)
        guard let range = KeyRange.bounds(of: wanted) else { return [:] }
        let filter: BSONDocument = wanted.count == 1 ? ["_id": .string(persons[0])] : ["p": range]
        let documents = try await mapErrors {
            try await self.persons.find(filter, options: FindOptions(projection: Self.stateFields))
        }
        var found: [String: PersonUnread] = [:]
        for document in documents {
            guard let person = document["_id"]?.stringValue, wanted.contains(person) else { continue }
            found[person] = Self.state(of: document)
        }
        return found
    }

    /// `person`'s counts (none counted: zero).
    /// - Throws: `DAOError`.
    public func counts(of person: String) async throws -> UnreadCounts {
        guard let state = try await states(of: [person])[person] else { return UnreadCounts() }
        return state.counts(at: try await numbers(of: Array(state.threads.keys)))
    }

    /// Counts the message `key` (numbered `numbers` in its groups) unread for `groupOf`'s persons, each through the
    /// group they were reached by (nil: named): one range read of their documents, a write only for a person named
    /// and one met in their group the first time. Returns each person's counts with it; `known` holds the groups'
    /// numbers read so far (a fan-out's batches read each group once).
    /// - Throws: `DAOError`.
    public func count(
        _ key: ObjectID, numbers: [String: Int64], for groupOf: [String: String?], known: inout [String: Int64]
    ) async throws -> [String: UnreadCounts] {
        let persons = Array(groupOf.keys)
        var states = try await states(of: persons)
        var inserts: [String: BSONDocument] = [:]
        var updates: [UpdateStatement] = []
        for person in persons {
            var state = states[person]
            switch groupOf[person] ?? nil {
            case nil:
                if state == nil {
                    inserts[person] = ["_id": .string(person), "p": .string(person), "d": 1, "k": [.string(key.hex)]]
                } else {
                    updates.append(Self.countingNamed(key, for: person))
                }
                state = PersonUnread(direct: (state?.direct ?? 0) + 1, threads: state?.threads ?? [:])
            case let group?:
                guard let number = numbers[group], state?.threads[group] == nil else { break }
                // Met in the group the first time: everything before this message counts as read.
                let thread = UnreadThread(mark: number - 1)
                if state == nil {
                    inserts[person] = [
                        "_id": .string(person), "p": .string(person),
                        "t": .document(BSONDocument([(key: Self.groupKey(group), value: Self.value(of: thread))])),
                    ]
                } else {
                    updates.append(Self.starting(thread, in: group, for: person))
                }
                state = PersonUnread(
                    direct: state?.direct ?? 0, threads: (state?.threads ?? [:]).merging([group: thread]) { $1 })
            }
            states[person] = state
        }
        if !inserts.isEmpty {
            let documents = Array(inserts.values)
            let refused = try await mapErrors { try await self.persons.insertManyIgnoringDuplicates(documents) }
            // Made meanwhile by another message's fan-out: written by an update instead.
            for index in refused {
                guard let person = documents[index]["_id"]?.stringValue else { continue }
                switch groupOf[person] ?? nil {
                case nil: updates.append(Self.countingNamed(key, for: person))
                case let group?:
                    if let number = numbers[group] {
                        updates.append(Self.starting(UnreadThread(mark: number - 1), in: group, for: person))
                    }
                }
            }
        }
        if !updates.isEmpty { _ = try await mapErrors { try await self.persons.bulkUpdate(updates) } }
        for (group, number) in numbers { known[group] = max(known[group] ?? 0, number) }
        let missing = Set(states.values.flatMap(\.threads.keys)).subtracting(known.keys)
        if !missing.isEmpty { known.merge(try await self.numbers(of: Array(missing))) { $1 } }
        var counts: [String: UnreadCounts] = [:]
        for (person, state) in states where groupOf[person] != nil { counts[person] = state.counts(at: known) }
        return counts
    }

    /// A thread as stored.
    static func value(of thread: UnreadThread) -> BSONValue {
        ["m": .int64(thread.mark), "r": .array(thread.read.map(BSONValue.int64))]
    }

    /// The update that counts message `key` named to `person` unless it is counted already.
    static func countingNamed(_ key: ObjectID, for person: String) -> UpdateStatement {
        UpdateStatement(
            filter: ["_id": .string(person), "k": ["$ne": .string(key.hex)]],
            update: [
                "$inc": ["d": 1],
                "$push": ["k": ["$each": [.string(key.hex)], "$slice": .int64(-Int64(keptKeys))]],
            ])
    }

    /// The update that starts `person`'s thread in `group` at `thread`, unless they have one.
    static func starting(_ thread: UnreadThread, in group: String, for person: String) -> UpdateStatement {
        let path = "t.\(groupKey(group))"
        return UpdateStatement(
            filter: ["_id": .string(person), path: ["$exists": false]],
            update: ["$set": .document(BSONDocument([(key: path, value: value(of: thread))]))])
    }

    /// Marks the message numbered `number` in `group` read for `persons` who count in the group (those it was not
    /// sent to: left out, or reached as named or through another group): one bulk write.
    /// - Throws: `DAOError`.
    public func markRead(_ number: Int64, in group: String, for persons: [String]) async throws {
        guard !persons.isEmpty else { return }
        _ = try await mapErrors {
            try await self.persons.bulkUpdate(persons.map { Self.reading(number, in: group, for: $0) })
        }
    }

    /// The update that marks `number` read in `person`'s thread of `group` when it is unread there.
    static func reading(_ number: Int64, in group: String, for person: String) -> UpdateStatement {
        let path = "t.\(groupKey(group))"
        return UpdateStatement(
            filter: [
                "_id": .string(person), "\(path).m": ["$lt": .int64(number)], "\(path).r": ["$ne": .int64(number)],
            ],
            update: [
                "$push": .document(
                    BSONDocument([
                        (
                            key: "\(path).r",
                            value: ["$each": [.int64(number)], "$slice": .int64(-Int64(keptReads))] as BSONValue
                        )
                    ]))
            ])
    }

    /// Marks message `key` read for `person`: in each group it was numbered in (its `unread_messages` entry) where
    /// the person counts it unread, and as named to them when `named`; one conditional update each. Returns the
    /// person's counts after it, or nil when it was unread nowhere (read already, or never counted).
    /// - Throws: `DAOError`.
    public func markRead(_ key: ObjectID, for person: String, named: Bool) async throws -> UnreadCounts? {
        var lowered = false
        if named {
            let result = try await mapErrors {
                try await persons.updateOne(
                    ["_id": .string(person), "k": .string(key.hex)],
                    ["$inc": ["d": -1], "$pull": ["k": .string(key.hex)]])
            }
            lowered = result.modifiedCount > 0
        }
        for (group, number) in try await numbers(ofMessage: key) {
            let reading = Self.reading(number, in: group, for: person)
            let result = try await mapErrors { try await persons.updateOne(reading.filter, reading.update) }
            guard result.modifiedCount > 0 else { continue }
            lowered = true
            try await compact(group, for: person)
        }
        return lowered ? try await counts(of: person) : nil
    }

    /// Moves `person`'s mark in `group` past the numbers read right after it, when nothing changed the thread since
    /// it was read (else a later read does it).
    private func compact(_ group: String, for person: String) async throws {
        guard let thread = try await states(of: [person])[person]?.threads[group], let moved = thread.compacted()
        else { return }
        let path = "t.\(Self.groupKey(group))"
        _ = try await mapErrors {
            try await persons.updateOne(
                [
                    "_id": .string(person), "\(path).m": .int64(thread.mark),
                    "\(path).r": ["$size": .int64(Int64(thread.read.count))],
                ],
                ["$set": .document(BSONDocument([(key: path, value: Self.value(of: moved))]))])
        }
    }

    /// Forgets `persons`' threads of `group` (they left it): one update.
    /// - Throws: `DAOError`.
    public func forget(_ persons: [String], in group: String) async throws {
        guard !persons.isEmpty else { return }
        let path = "t.\(Self.groupKey(group))"
        let filter: BSONDocument =
            persons.count == 1
            ? ["_id": .string(persons[0]), path: ["$exists": true]]
            : ["_id": ["$in": .array(persons.map(BSONValue.string))], path: ["$exists": true]]
        _ = try await mapErrors {
            try await self.persons.updateMany(
                filter, ["$unset": .document(BSONDocument([(key: path, value: .string(""))]))])
        }
    }

    /// Whether anyone's unread is counted at all (`UNREAD_COUNTS` on now or once): one read of one document.
    /// - Throws: `MongoError`.
    func countsAnyone() async throws -> Bool {
        try await persons.findOne([:], projection: ["_id": 1]) != nil
    }

    /// Forgets every thread of `group` (the group is deleted; its numbering goes on should it be made again).
    /// - Throws: `DAOError`.
    public func forget(group: String) async throws {
        let path = "t.\(Self.groupKey(group))"
        _ = try await mapErrors {
            try await persons.updateMany(
                [path: ["$exists": true]], ["$unset": .document(BSONDocument([(key: path, value: .string(""))]))])
        }
    }
}
