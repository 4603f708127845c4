import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import HubTime
import Hummingbird
import HummingbirdTesting
import Logging
import Mongo
import MongoTestSupport
import Testing

/// A person's data on request (issue 47) against the real hub: a pupil with two phones, three groups (one a room
/// they post in and manage), settings, a message to them and another pupil, receipts and an acknowledgement, is
/// exported (every kind present, no registration or secret) and erased (nothing of theirs left in any collection,
/// the other pupil's message and membership intact, the erasure recorded under a pseudonym only); an erasure whose
/// worker stopped half-way resumes and finishes; a roster sync within the block window does not add them back.
@Suite struct PersonDataTests {
    static let pupil = "pupil-7"
    static let other = "pupil-8"

    /// The world of the test: two phones of `pupil`, one of `other`, three groups, settings, a room post, a
    /// message to both with receipts and an acknowledgement.
    struct World {
        var phones: [Phone]
        var otherPhone: Phone
        var messageKey: String
        var postKey: String
    }

    static func world(_ hub: HubHarness) async throws -> World {
        func phone(_ registration: String, _ person: String) async throws -> Phone {
            let phone = try await hub.register(registration)
            let assertion = try await AssertionSigner.hmac(PersonBindingTests.secret)
                .sign(AssertionSigner.claims(sub: person))
            #expect(try await hub.bind(phone, assertion).status == .ok)
            return phone
        }
        let phones = [try await phone("erase-token-a", pupil), try await phone("erase-token-b", pupil)]
        let otherPhone = try await phone("erase-token-c", other)
        let groups = GroupService(database: hub.database)
        _ = try await groups.replace(id: "chess", name: "Chess", members: [pupil, other], access: [])
        _ = try await groups.replace(id: "drama", name: "Drama", members: [pupil], access: [])
        var room = Group.RoomSettings()
        room.posting = .members
        room.managers = [pupil]
        _ = try await groups.replace(id: "den", name: "Den", members: [pupil, other], access: [], room: room)
        let settings = try await hub.request(
            .put, "/device/\(phones[0].deviceID)/person/settings", as: .token(phones[0].secret),
            json: #"{"locale": "de", "delivery": {"groups": {"drama": "digest"}}}"#)
        #expect(settings.status == .ok, "\(settings.text)")
        let post = try await hub.request(
            .post, "/group/den/messages", as: .token(phones[0].secret), json: #"{"message": "Who has the key?"}"#)
        #expect(post.status == .created, "\(post.text)")
        let sent = try await hub.request(
            .post, "/message", as: .admin,
            json:
                #"{"title": "Trip", "desc": "Coats", "message": "Bring a coat", "distribution": "Alert", "to": {"persons": ["\#(pupil)", "\#(other)"]}, "ack": {"within_s": 3600, "responses": ["yes", "no"]}}"#
        )
        #expect(sent.status == .created || sent.status == .accepted, "\(sent.text)")
        let key = try #require(try sent.json()["msi_key"]?.stringValue)
        for (index, phone) in phones.enumerated() {
            let at = UnixTime.nowMilliseconds()
            let receipt =
                index == 0
                ? #"{"msi_key": "\#(key)", "event": "acknowledged", "response": "yes", "at": \#(at)}"#
                : #"{"msi_key": "\#(key)", "event": "opened", "at": \#(at)}"#
            let answer = try await hub.request(
                .post, "/device/\(phone.deviceID)/receipts", as: .token(phone.secret), json: "[\(receipt)]")
            #expect(answer.status == .ok, "\(answer.text)")
        }
        return World(
            phones: phones, otherPhone: otherPhone, messageKey: key,
            postKey: try #require(try post.json()["msi_key"]?.stringValue))
    }

    @Test func aPersonIsExportedWholeThenErasedFromEveryCollection() async throws {
        try await HubHarness.with(seed: HubHarness.legacy, persons: try PersonBindingTests.persons()) { hub in
            let world = try await Self.world(hub)
            try await eventually("the receipts are counted") {
                try await hub.database.collection(CollectionName.receipts).countDocuments([
                    "person": .string(Self.pupil)
                ])
                    == 2
            }

            let export = try await hub.request(.get, "/person/\(Self.pupil)/export", as: .admin)
            #expect(export.status == .ok && export.headers[.contentType]?.hasPrefix("application/json") == true)
            let document = try export.json()
            #expect(document["person"]?.stringValue == Self.pupil)
            #expect(document["devices"]?.arrayValue?.count == 2)
            #expect(
                Set(document["groups"]?.arrayValue?.compactMap { $0.documentValue?["group"]?.stringValue } ?? [])
                    == ["chess", "drama", "den"])
            #expect(document["managed_groups"]?.arrayValue?.count == 1)
            #expect(document["settings"]?.arrayValue?.first?.documentValue?["locale"]?.stringValue == "de")
            #expect(document["delivery_choices"]?.arrayValue?.count == 1)
            #expect(
                document["messages"]?.arrayValue?.contains { $0.documentValue?["title"]?.stringValue == "Trip" } == true
            )
            #expect(document["room_posts"]?.arrayValue?.count == 1)
            #expect(document["receipts"]?.arrayValue?.count == 2)
            #expect(document["acknowledgements"]?.arrayValue?.count == 1)
            let audit = document["audit"]?.arrayValue?.compactMap { $0.documentValue?["action"]?.stringValue } ?? []
            #expect(audit.filter { $0 == "device.bind" }.count == 2, "the binds name the person and their devices")
            #expect(audit.contains("message.send"), "the message to them names them")
            #expect(document["unread"] != nil && document["events"] != nil && document["held_back"] != nil)
            // Never a registration token or a secret.
            for secret in ["erase-token-a", "erase-token-b", world.phones[0].secret, "secret_hash", "registration"] {
                #expect(!export.text.contains(secret), "\(secret)")
            }
            #expect(try await hub.request(.get, "/person/\(Self.pupil)/export", as: .communicator).status == .forbidden)

            // Erased: 202 with the job, then done.
            let erase = try await hub.request(.delete, "/person/\(Self.pupil)?posts=delete", as: .admin)
            #expect(erase.status == .accepted && erase.headers[.location] == "/person/\(Self.pupil)/erasure")
            #expect(try erase.json()["state"]?.stringValue == "running")
            #expect(
                try await hub.request(.delete, "/person/\(Self.pupil)?posts=burn", as: .admin).status
                    == .unprocessableContent)
            try await eventually("the erasure is done", within: .seconds(60)) {
                try await hub.request(.get, "/person/\(Self.pupil)/erasure", as: .admin).json()["state"]?.stringValue
                    == "done"
            }
            // Nothing of the pupil in any collection: their id, their phones' ids and registration tokens.
            let needles = [Self.pupil, "erase-token-a", "erase-token-b"] + world.phones.map(\.deviceID)
            // The audit log holds pseudonyms and sealed ids only (its keys are gone): it is read here too.
            for name in try await hub.database.collectionNames() {
                for document in try await hub.database.collection(name).find([:]) {
                    let text = document.extendedJSON(.relaxed)
                    for needle in needles {
                        #expect(!text.contains(needle), "\(name) still holds \(needle): \(text.prefix(300))")
                    }
                }
            }
            // The audit log names no person: the erasure is recorded under a pseudonym, nothing opens it any more
            // (readers see "erased person" wherever the pupil or their phones were named), and the chain holds.
            let erasureEntries = try await hub.database.collection(CollectionName.audit).find(["target.kind": "person"])
            #expect(erasureEntries.map { $0["action"]?.stringValue } == ["person.erase.request", "person.erase"])
            #expect(erasureEntries.allSatisfy { $0["target"]?.documentValue?["id"]?.stringValue?.count == 64 })
            let revealed = try await AuditReading.entries(hub.database)
            let binds = revealed.filter { $0["action"] == "device.bind" }
            #expect(binds.count == 3)
            #expect(binds.filter { $0[path: "change.after.person"] == "erased person" }.count == 2)
            #expect(binds.filter { $0[path: "target.id"] == "erased device" }.count == 2)
            #expect(binds.contains { $0[path: "change.after.person"] == .string(Self.other) })
            let send = try #require(revealed.first { $0[path: "change.after.title"] == "Trip" })
            #expect(send[path: "change.after.to.persons"] == ["erased person", .string(Self.other)])
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            if case .broken(let seq, let reason) = try await services.audit.verify() {
                Issue.record("the audit chain broke at \(seq): \(reason)")
            }
            // The other pupil keeps the message, their groups and their phone.
            let messageID = try #require(ObjectID(hex: world.messageKey))
            let stored = try await hub.database.collection(CollectionName.message).findOne([
                "msi_key": .objectID(messageID)
            ])
            let message = try #require(stored)
            #expect(message["to"]?.documentValue?["persons"]?.arrayValue == [.string(Self.other)])
            #expect(try await GroupDAO(database: hub.database).groups(of: Self.other).sorted() == ["chess", "den"])
            #expect(
                try await hub.request(.get, "/device/\(world.otherPhone.deviceID)", as: .token(world.otherPhone.secret))
                    .status == .ok)
            // The pupil's room post is gone.
            let postID = try #require(ObjectID(hex: world.postKey))
            #expect(
                try await hub.database.collection(CollectionName.message).countDocuments(["msi_key": .objectID(postID)])
                    == 0)
            // Their phones are gone, and their secrets no longer open anything.
            #expect(
                try await hub.request(.get, "/device/\(world.phones[0].deviceID)", as: .token(world.phones[0].secret))
                    .status == .unauthorized)
        }
    }

    @Test func anErasureWhoseWorkerStoppedHalfWayResumesAndRoomPostsMayStayAnonymous() async throws {
        try await HubHarness.with(seed: HubHarness.legacy, persons: try PersonBindingTests.persons()) { hub in
            let world = try await Self.world(hub)
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            let pseudonym = try await services.personData.pseudonyms.pseudonym(of: Self.pupil)
            // A job a worker took past its first step and then died with: its lease ran out, its devices were read.
            let erasures = hub.database.collection(CollectionName.erasures)
            try await erasures.insertOne([
                "_id": .string(pseudonym), "person": .string(Self.pupil), "state": "running", "posts": "anonymise",
                "step": 1,
                "devices": .array(world.phones.compactMap { ObjectID(hex: $0.deviceID) }.map(BSONValue.objectID)),
                "counts": ["deliveries": 0], "started_at": .int64(UnixTime.nowMilliseconds() - 120_000),
                "due_at": .int64(UnixTime.nowMilliseconds() - 60_000), "lease_owner": "dead/1",
                "lease_until": .int64(UnixTime.nowMilliseconds() - 1_000),
            ])
            try await eventually("a worker takes the job up and finishes it", within: .seconds(60)) {
                try await hub.request(.get, "/person/\(Self.pupil)/erasure", as: .admin).json()["state"]?.stringValue
                    == "done"
            }
            // Steps 1 on ran: devices, records, groups, settings, messages, events.
            #expect(
                try await hub.database.collection(CollectionName.personSettings).countDocuments([
                    "_id": .string(Self.pupil)
                ]) == 0)
            #expect(
                try await hub.database.collection(CollectionName.devices).countDocuments(["person": .string(Self.pupil)]
                ) == 0)
            let postID = try #require(ObjectID(hex: world.postKey))
            let found = try await hub.database.collection(CollectionName.message).findOne(["msi_key": .objectID(postID)]
            )
            let post = try #require(found)
            #expect(
                post["sender"]?.documentValue?["erased"]?.boolValue == true
                    && !post.extendedJSON(.relaxed).contains(Self.pupil))
            let record = try await erasures.findOne(["_id": .string(pseudonym)])
            let done = try #require(record)
            #expect(done["person"] == nil && done["devices"] == nil && done["lease_owner"] == nil)
        }
    }

    @Test func aRosterSyncWithinTheBlockWindowDoesNotBringAnErasedPersonBack() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let services = HubServices(
                pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4,
                pseudonymKey: String(repeating: "k", count: 32), erasureBlockDays: 30)
            _ = try await services.groups.replace(
                id: "chess", name: "Chess", members: [Self.pupil, Self.other], access: [])
            _ = try await services.personData.erase(Self.pupil, posts: .delete)
            while try await services.personData.erasure(of: Self.pupil)?.state != .done {
                try await services.personData.runDueErasures()
            }
            #expect(try await GroupDAO(database: database).groups(of: Self.pupil).isEmpty)
            // The school's roster still lists the pupil: the sync keeps them out, and adding them is refused.
            _ = try await services.groups.replace(
                id: "chess", name: "Chess", members: [Self.pupil, Self.other], access: [])
            #expect(try await GroupDAO(database: database).members(of: "chess", after: nil, limit: 10) == [Self.other])
            await #expect { try await services.groups.add(Self.pupil, to: "chess") } throws: {
                ($0 as? GroupRefusal)?.code == .erasedPerson
            }
            // A room's managers too.
            var room = Group.RoomSettings()
            room.posting = .members
            room.managers = [Self.pupil, Self.other]
            let den = try await services.groups.replace(
                id: "den", name: "Den", members: [Self.pupil, Self.other], access: [], room: room)
            #expect(den.group.managers == [Self.other])
            // Without a block window nothing is kept out.
            let unblocked = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4)
            #expect(try await unblocked.personData.blocked([Self.pupil]).isEmpty)
        }
    }

    @Test func aFailingStepIsRetriedLaterEachTimeWithItsErrorShownUntilTheErasureEnds() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4)
            // An event whose audience holds the person where the database cannot take them out ($pull on a string).
            let events = database.collection(CollectionName.events)
            try await events.insertOne([
                "_id": .objectID(ObjectID()), "template": ["to": ["persons": .string(Self.pupil)]],
            ])
            _ = try await services.personData.erase(Self.pupil, posts: .delete)
            let before = UnixTime.nowMilliseconds()
            #expect(try await services.personData.runDueErasures() == 1)
            let failed = try #require(try await services.personData.erasure(of: Self.pupil))
            #expect(failed.state == .running && failed.failures == 1 && failed.lastError != nil)
            #expect(failed.step == 6, "the steps before the events' are recorded done")
            let job = try #require(try await database.collection(CollectionName.erasures).findOne([:]))
            let due = try #require(job["due_at"]?.int64Value)
            #expect(due >= before + 30_000 && due < before + 60_000, "retried in 30 s")
            #expect(try await services.personData.runDueErasures() == 0, "not before its time")
            #expect(PersonDataService.retryDelay(afterFailures: 1) == 60_000)
            #expect(PersonDataService.retryDelay(afterFailures: 40) == 3_600_000)
            // Mended, and due: it resumes at the step that failed and ends.
            _ = try await events.updateMany([:], ["$set": ["template.to.persons": .array([])]])
            _ = try await database.collection(CollectionName.erasures).updateMany(
                [:], ["$set": ["due_at": .int64(UnixTime.nowMilliseconds() - 1)]])
            #expect(try await services.personData.runDueErasures() == 1)
            let done = try #require(try await services.personData.erasure(of: Self.pupil))
            #expect(done.state == .done && done.failures == 1)
        }
    }

    @Test func retentionDeletesWhatIsPastItsLimitABatchAtATimeAndKeepsTheRest() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let now = UnixTime.nowMilliseconds()
            // A message of 400 days ago and one of today, by their ObjectIds' creation seconds.
            func objectID(daysAgo: Int64) -> ObjectID {
                let seconds = UInt32((now - daysAgo * 86_400_000) / 1000)
                return ObjectID(
                    hex: String(format: "%08x", seconds) + String(format: "%016llx", UInt64.random(in: 0...UInt64.max)))!
            }
            let old = objectID(daysAgo: 400), recent = objectID(daysAgo: 1), scheduled = objectID(daysAgo: 401)
            let deliveries = database.collection(CollectionName.deliveries)
            _ = try await deliveries.insertMany(
                (0..<250).map { _ -> BSONDocument in
                    ["_id": .string("\(old.hex)/\(ObjectID().hex)"), "message": .objectID(old)]
                }
                    + (0..<10).map { _ -> BSONDocument in
                        ["_id": .string("\(recent.hex)/\(ObjectID().hex)"), "message": .objectID(recent)]
                    })
            let receipts = database.collection(CollectionName.receipts)
            _ = try await receipts.insertMany(
                (0..<5).map { _ -> BSONDocument in ["_id": .string("\(old.hex)/\(ObjectID().hex)/opened")] }
                    + (0..<5).map { _ -> BSONDocument in ["_id": .string("\(recent.hex)/\(ObjectID().hex)/opened")] })
            let messages = database.collection(CollectionName.message)
            _ = try await messages.insertMany([
                [
                    "_id": .objectID(objectID(daysAgo: 400)), "msi_key": .objectID(ObjectID()), "title": "old sent",
                    "relay": ["state": "sent"],
                ],
                [
                    "_id": .objectID(objectID(daysAgo: 400)), "msi_key": .objectID(ObjectID()),
                    "title": "old scheduled", "relay": ["state": "pending"],
                ],
                [
                    "_id": .objectID(objectID(daysAgo: 400)), "msi_key": .objectID(ObjectID()), "title": "old post",
                    "sender": ["person": "pupil-1"],
                    "relay": ["state": "sent"],
                ],
                [
                    "_id": .objectID(objectID(daysAgo: 1)), "msi_key": .objectID(ObjectID()), "title": "new sent",
                    "relay": ["state": "sent"],
                ],
                [
                    "_id": .objectID(objectID(daysAgo: 400)), "msi_key": .objectID(ObjectID()), "title": "old direct",
                    "relay": ["state": "direct"],
                ],
                [
                    "_id": .objectID(scheduled), "msi_key": .objectID(ObjectID()), "title": "scheduled ahead",
                    "relay": ["state": "sent", "send_at": .int64(now - 86_400_000)],
                ],
            ])
            // The deliveries of a message made 400 days ago but sent yesterday stay with it.
            _ = try await deliveries.insertMany(
                (0..<3).map { _ -> BSONDocument in ["_id": .string("\(scheduled.hex)/\(ObjectID().hex)")] })
            // One batch reads at most its size (1,000 in the hub) a collection and says where the next one starts: the
            // first 100 are the 3 deliveries of the message sent yesterday (kept) and 97 old ones.
            let retention = RetentionDAO(database: database)
            let first = try await retention.purgeBatch(
                .deliveries, before: now - 30 * 86_400_000, now: now, limit: 100)
            #expect(first.deleted == 97 && first.next[CollectionName.deliveries] != nil)
            let sweep = RetentionSweep(
                database: database,
                limits: RetentionLimits(days: [.deliveries: 30, .receipts: 30, .messages: 365, .roomPosts: 30]),
                logger: Logger(label: "test"), now: UnixTime.nowMilliseconds, batch: 100)
            let counts = try await sweep.purge(pause: .zero)
            #expect(counts[.deliveries] == 153 && counts[.receipts] == 5)
            #expect(counts[.messages] == 2 && counts[.roomPosts] == 1)
            #expect(try await deliveries.countDocuments() == 13)
            #expect(try await receipts.countDocuments() == 5)
            let titles = try await messages.find([:]).compactMap { $0["title"]?.stringValue }.sorted()
            #expect(
                titles == ["new sent", "old scheduled", "scheduled ahead"],
                "a message the relay is not done with, or sent after the cutoff, stays")
            // No limit set: nothing is deleted.
            let none = RetentionSweep(
                database: database, limits: RetentionLimits(days: [.deliveries: 0]), logger: Logger(label: "test"),
                now: UnixTime.nowMilliseconds)
            let nothing = try await none.purge()
            #expect(none.limits.isEmpty && nothing.isEmpty)
        }
    }

    @Test func retentionPurgesABatchAtATimeWhileMessagesAreSent() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            // 2,500 deliveries of a message of 400 days ago.
            let seconds = UInt32((UnixTime.nowMilliseconds() - 400 * 86_400_000) / 1000)
            let old = try #require(ObjectID(hex: String(format: "%08x", seconds) + "0000000000000000"))
            let deliveries = hub.database.collection(CollectionName.deliveries)
            for start in stride(from: 0, to: 2_500, by: 500) {
                _ = try await deliveries.insertMany(
                    (start..<start + 500).map { index -> BSONDocument in
                        ["_id": .string("\(old.hex)/\(index)"), "message": .objectID(old)]
                    })
            }
            let sweep = RetentionSweep(
                database: hub.database, limits: RetentionLimits(days: [.deliveries: 30]), logger: Logger(label: "test"),
                now: UnixTime.nowMilliseconds, batch: 250)
            async let purged = sweep.purge(pause: .milliseconds(5))
            var keys: [ObjectID] = []
            for index in 0..<20 {
                let sent = try await hub.request(
                    .post, "/message", as: .communicator, json: MessageRoutesTests.body(title: "Notice \(index)"))
                #expect(sent.status == .created, "\(sent.text)")
                keys.append(try #require(ObjectID(hex: try sent.json()["msi_key"]?.stringValue ?? "")))
            }
            let counts = try await purged
            #expect(counts[.deliveries] == 2_500, "ten batches of 250")
            #expect(try await deliveries.countDocuments(["message": .objectID(old)]) == 0)
            for key in keys {
                try await eventually("each message sent meanwhile is relayed") {
                    try await hub.relayState(key) != "pending"
                }
            }
            #expect(
                try await hub.database.collection(CollectionName.message).countDocuments([
                    "msi_key": ["$in": .array(keys.map(BSONValue.objectID))]
                ]) == 20)
        }
    }
}
