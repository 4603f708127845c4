import Foundation
import HubTime
import Mongo

/// Where the hub holds a person's data, for an export (each kind read a page at a time, never whole) and an erasure
/// (each kind removed or changed by one command a step). The one place that knows which collection and field
/// name a person or their devices; `PersonDataService` in HubCore decides the order and what is kept.
public struct PersonDataDAO: Sendable {
    let database: MongoDatabase
    let now: UnixClock

    /// The blocks of erased persons expire at `expire_at` (`ExpirySweepDAO`).
    static let blockExpiry = ExpiringCollection(
        CollectionName.erasureBlocks, field: "expire_at", retiredTTLIndex: "expire_at")
    static let blockIndexes = [blockExpiry.index]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.database = database
        self.now = now
    }

    /// A kind of record about a person the export lists, in its order.
    public enum Kind: String, Sendable, CaseIterable {
        case devices, groups, managedGroups = "managed_groups", settings, deliveryChoices = "delivery_choices"
        case mutes, digest, unread, messages, roomPosts = "room_posts", events, deliveries
        case heldBack = "held_back", receipts, acknowledgements, audit
    }

    /// Who an export is of: the person's id, their devices' ids, and the pseudonyms the audit log names them and
    /// their devices by.
    public struct Subject: Sendable {
        public var person: String
        public var devices: [ObjectID]
        public var pseudonyms: [String]

        public init(person: String, devices: [ObjectID], pseudonyms: [String]) {
            self.person = person
            self.devices = devices
            self.pseudonyms = pseudonyms
        }
    }

    /// Where `kind` is, what selects the person's records, and what of them is shown (never a registration token, a
    /// secret's hash or a nonce).
    func source(_ kind: Kind, of subject: Subject) -> (String, BSONDocument, BSONDocument?) {
        let person = BSONValue.string(subject.person)
        let deviceIDs = BSONValue.array(subject.devices.map(BSONValue.objectID))
        let deviceHex = BSONValue.array(subject.devices.map { .string($0.hex) })
        switch kind {
        case .devices:
            return (
                CollectionName.devices, ["person": person],
                [
                    "platform": 1, "state": 1, "locale": 1, "app_version": 1, "quiet_hours": 1, "created_at": 1,
                    "updated_at": 1,
                ]
            )
        case .groups: return (CollectionName.groupMembers, ["person": person], ["group": 1])
        case .managedGroups: return (CollectionName.groups, ["managers": person], ["name": 1])
        case .settings: return (CollectionName.personSettings, ["_id": person], nil)
        case .deliveryChoices:
            return (CollectionName.personDeliveries, ["person": person], ["scope": 1, "id": 1, "mode": 1])
        case .mutes: return (CollectionName.personMutes, ["person": person], ["group": 1, "until": 1])
        case .digest: return (CollectionName.digestSchedule, ["_id": person], ["due_at": 1, "since": 1, "last": 1])
        case .unread: return (CollectionName.personUnread, ["_id": person], nil)
        case .messages:
            return (
                CollectionName.message, ["$or": [["to.persons": person], ["to.except.persons": person]]],
                ["msi_key": 1, "title": 1, "timestamp": 1, "sender": 1, "to": 1]
            )
        case .events:
            return (
                CollectionName.events,
                ["$or": [["template.to.persons": person], ["template.to.except.persons": person]]],
                ["template.title": 1, "starts_at": 1, "tz": 1, "template.to": 1, "rota": 1]
            )
        case .roomPosts:
            return (
                CollectionName.message, ["sender.person": person],
                ["msi_key": 1, "title": 1, "message": 1, "timestamp": 1, "room": 1]
            )
        case .deliveries:
            return (CollectionName.deliveries, ["$or": [["person": person], ["device": ["$in": deviceIDs]]]], nil)
        case .heldBack:
            return (
                CollectionName.quietDeferrals, ["$or": [["person": person], ["device": ["$in": deviceIDs]]]],
                ["msi_key": 1, "device": 1, "person": 1, "group": 1, "due_at": 1, "state": 1]
            )
        case .receipts:
            return (CollectionName.receipts, ["$or": [["person": person], ["device": ["$in": deviceIDs]]]], nil)
        case .acknowledgements: return (CollectionName.personAcknowledgements, ["person": person], nil)
        case .audit:
            return (
                CollectionName.audit,
                [
                    "$or": [
                        ["subjects.id": ["$in": .array(subject.pseudonyms.map(BSONValue.string))]],
                        // Entries written before pseudonyms name the person and devices in clear.
                        ["target.id": ["$in": deviceHex]], ["actor.name": ["$in": deviceHex]],
                        ["change.person": person], ["change.before.person": person],
                        ["change.after.person": person], ["change.persons": person],
                        ["change.after.to.persons": person],
                    ]
                ],
                ["seq": 1, "at": 1, "actor": 1, "action": 1, "target": 1, "subjects.kind": 1, "subjects.id": 1]
            )
        }
    }

    /// Up to `limit` of the person's records of `kind` after `after` (an `_id`), in `_id` order.
    /// - Throws: `DAOError`.
    public func page(_ kind: Kind, of subject: Subject, after: BSONValue?, limit: Int) async throws
        -> [BSONDocument]
    {
        let (name, selection, projection) = source(kind, of: subject)
        var filter = selection
        if let after {
            filter = ["$and": [.document(selection), ["_id": ["$gt": after]]]]
        }
        return try await mapErrors {
            try await database.collection(name).find(
                filter, options: FindOptions(projection: projection, sort: ["_id": 1], limit: Int64(limit)))
        }
    }

    /// The ids of the person's devices (read before an erasure deletes any).
    /// - Throws: `DAOError`.
    public func deviceIDs(of person: String) async throws -> [ObjectID] {
        try await mapErrors {
            try await database.collection(CollectionName.devices).find(
                ["person": .string(person)], options: FindOptions(projection: ["_id": 1]))
        }.compactMap { $0["_id"]?.objectIDValue }
    }

    // MARK: Erasure

    /// Deletes what records the person's deliveries, receipts, acknowledgements and held-back sends (by the person,
    /// and by their devices: a topic's deliveries name only the device). Answers the counts by collection.
    /// - Throws: `DAOError`.
    public func eraseRecords(of person: String, devices: [ObjectID]) async throws -> [String: Int64] {
        let selection: BSONDocument = [
            "$or": [["person": .string(person)], ["device": ["$in": .array(devices.map(BSONValue.objectID))]]]
        ]
        var counts: [String: Int64] = [:]
        for name in [
            CollectionName.deliveries, CollectionName.receipts, CollectionName.personAcknowledgements,
            CollectionName.quietDeferrals,
        ] {
            counts[name] = try await mapErrors { try await database.collection(name).deleteMany(selection) }
        }
        return counts
    }

    /// Deletes the person's settings, delivery choices, mutes, unread counts, digest and room-post counters.
    /// - Throws: `DAOError`.
    public func eraseSettings(of person: String) async throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for name in [CollectionName.personSettings, CollectionName.personUnread, CollectionName.digestSchedule] {
            counts[name] = try await mapErrors {
                try await database.collection(name).deleteMany(["_id": .string(person)])
            }
        }
        for name in [CollectionName.personDeliveries, CollectionName.personMutes] {
            counts[name] = try await mapErrors {
                try await database.collection(name).deleteMany(["person": .string(person)])
            }
        }
        // The room-post counters of the minute (`room-post:<person>:<window>`), a prefix of `_id`.
        counts[CollectionName.rateWindows] = try await mapErrors {
            try await database.collection(CollectionName.rateWindows).deleteMany([
                "_id": .regex(BSONRegex(pattern: "^" + AuditFilter.escaped("room-post:\(person):")))
            ])
        }
        return counts
    }

    /// Takes the person out of groups' managers and roster marks (their memberships go through `GroupDAO.remove`).
    /// - Throws: `DAOError`.
    public func eraseFromGroupLists(_ person: String) async throws -> Int64 {
        try await mapErrors {
            let groups = database.collection(CollectionName.groups)
            let managers = try await groups.updateMany(
                ["managers": .string(person)], ["$pull": ["managers": .string(person)]])
            let marks = try await groups.updateMany(
                ["member_marks": .string(person)], ["$pull": ["member_marks": .string(person)]])
            return managers.modifiedCount + marks.modifiedCount
        }
    }

    /// Takes the person out of messages' recipients (the message stays for the others), and deletes their room posts
    /// or keeps them without their author; a post they withdrew names no one. Answers the counts.
    /// - Throws: `DAOError`.
    public func eraseFromMessages(_ person: String, deletingPosts: Bool) async throws -> [String: Int64] {
        let messages = database.collection(CollectionName.message)
        let id = BSONValue.string(person)
        return try await mapErrors {
            var counts: [String: Int64] = [:]
            counts["message_recipients"] =
                try await messages.updateMany(["to.persons": id], ["$pull": ["to.persons": id]]).modifiedCount
            counts["message_exceptions"] =
                try await messages.updateMany(["to.except.persons": id], ["$pull": ["to.except.persons": id]])
                .modifiedCount
            if deletingPosts {
                counts["room_posts_deleted"] = try await messages.deleteMany(["sender.person": id])
            } else {
                counts["room_posts_anonymised"] =
                    try await messages.updateMany(["sender.person": id], ["$set": ["sender": ["erased": true]]])
                    .modifiedCount
            }
            counts["withdrawals"] =
                try await messages.updateMany(["withdrawn.by": id], ["$set": ["withdrawn.by": "erased person"]])
                .modifiedCount
            return counts
        }
    }

    /// Takes the person out of events' audiences and rota nights (a small collection: read, then one update an
    /// event that names them).
    /// - Throws: `DAOError`.
    public func eraseFromEvents(_ person: String) async throws -> Int64 {
        let events = database.collection(CollectionName.events)
        let id = BSONValue.string(person)
        return try await mapErrors {
            var changed: Int64 = 0
            for path in ["template.to.persons", "template.to.except.persons"] {
                changed += try await events.updateMany([path: id], ["$pull": .document([path: id])]).modifiedCount
            }
            for event in try await events.find([:], options: FindOptions(projection: ["rota": 1])) {
                let nights = (event["rota"]?.documentValue?.elements ?? []).filter {
                    $0.value.arrayValue?.contains(id) == true
                }
                guard let eventID = event["_id"], !nights.isEmpty else { continue }
                var pull: BSONDocument = [:]
                for night in nights { pull["rota." + night.key] = id }
                changed += try await events.updateOne(["_id": eventID], ["$pull": .document(pull)]).modifiedCount
            }
            return changed
        }
    }

    // MARK: Blocks

    /// Keeps `pseudonym` (the keyed hash of an erased person's id) until `until` (Unix ms).
    /// - Throws: `DAOError`.
    public func block(_ pseudonym: String, until: Int64) async throws {
        _ = try await mapErrors {
            try await database.collection(CollectionName.erasureBlocks).updateOne(
                ["_id": .string(pseudonym)], ["$set": ["expire_at": .datetime(until)]],
                options: UpdateOptions(upsert: true))
        }
    }

    /// Which of `pseudonyms` are blocked now.
    /// - Throws: `DAOError`.
    public func blocked(_ pseudonyms: [String]) async throws -> Set<String> {
        guard !pseudonyms.isEmpty else { return [] }
        var found = Set<String>()
        for chunk in stride(from: 0, to: pseudonyms.count, by: 1_000) {
            let ids = pseudonyms[chunk..<min(chunk + 1_000, pseudonyms.count)].map(BSONValue.string)
            let documents = try await mapErrors {
                try await database.collection(CollectionName.erasureBlocks).find(
                    ["_id": ["$in": .array(ids)], "expire_at": ["$gt": .datetime(now())]],
                    options: FindOptions(projection: ["_id": 1]))
            }
            found.formUnion(documents.compactMap { $0["_id"]?.stringValue })
        }
        return found
    }

    // MARK: The pseudonym key

    /// The key of persons' pseudonyms when no `AUDIT_PSEUDONYM_KEY` is set: 32 random bytes made once and kept in
    /// `settings` (the first replica to ask writes it; every one reads the same).
    /// - Throws: `DAOError`.
    public func storedPseudonymKey() async throws -> [UInt8] {
        let settings = database.collection(CollectionName.settings)
        var generator = SystemRandomNumberGenerator()
        let fresh = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let hex = Hex.encode(fresh)
        do {
            _ = try await mapErrors {
                try await settings.updateOne(
                    ["_id": "pseudonym_key"], ["$setOnInsert": ["key": .string(hex)]],
                    options: UpdateOptions(upsert: true))
            }
        } catch let error as DAOError where error.code == .duplicate {
            // Two first askers at once (two replicas, or two services starting): the other one stored it; read it.
        }
        let stored = try await mapErrors { try await settings.findOne(["_id": "pseudonym_key"]) }
        // Never a key of this process's own: every replica must hash with the one stored.
        guard let text = stored?["key"]?.stringValue, let key = Hex.decode(text), key.count >= 16 else {
            throw DAOError(.database, "the pseudonym key in settings is missing or malformed")
        }
        return key
    }
}
