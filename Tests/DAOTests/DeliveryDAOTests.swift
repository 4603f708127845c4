@testable import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("Per-device deliveries in the database")
struct DeliveryDAOTests {
    static func delivery(
        _ message: ObjectID, _ device: ObjectID = ObjectID(), person: String = "p1",
        group: String? = nil, platform: Platform = .android
    ) -> Delivery {
        Delivery(
            message: message, device: device, person: person, group: group, platform: platform,
            registration: "token-\(device.hex)")
    }

    @Test func anAnswerIsStoredOnceWithoutTheTokenAndAPendingOneGivesWayToTheNextAttemptsAnswer() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let dao = DeliveryDAO(database: database, now: { 42_000 })
            let message = ObjectID()
            let list = (0..<200).map { _ in Self.delivery(message) } + [Self.delivery(message, group: "chess")]
            var outcomes = list[0..<150].map { DeliveryOutcome($0, state: .sent) }
            outcomes += list[150..<170].map { DeliveryOutcome($0, state: .failed, code: "INVALID_ARGUMENT") }
            outcomes += list[170..<180].map { DeliveryOutcome($0, state: .unregistered, code: "UNREGISTERED") }
            outcomes += list[180..<190].map { DeliveryOutcome($0, state: .pending, code: "INTERNAL") }
            outcomes.append(DeliveryOutcome(list[200], state: .sent))
            #expect(try await dao.record(outcomes) == 191)
            // A late answer for one answered for good changes nothing; a pending one takes the next attempt's answer.
            #expect(
                try await dao.record([
                    DeliveryOutcome(list[0], state: .failed, code: "INTERNAL"),
                    DeliveryOutcome(list[180], state: .sent),
                ]) == 1)
            let counts = try await dao.counts(of: message)
            #expect(counts.byState == [.sent: 152, .failed: 20, .unregistered: 10, .pending: 9, .deferred: 0])
            let collection = database.collection(CollectionName.deliveries)
            let failed = try #require(try await collection.findOne(["_id": .string(list[150].id)]))
            #expect(failed["code"] == "INVALID_ARGUMENT" && failed["at"]?.int64Value == 42_000)
            #expect(failed["registration"] == nil)
            let retried = try #require(try await collection.findOne(["_id": .string(list[185].id)]))
            #expect(retried["state"] == "pending" && retried["code"] == "INTERNAL" && retried["at"] == nil)
            let grouped = try #require(try await collection.findOne(["_id": .string(list[200].id)]))
            #expect(grouped["via"] == "group" && grouped["group"] == "chess")
            // What a later attempt leaves out: the answers for good, not the pending ones nor devices never answered.
            let answered = try await dao.answered([
                list[0].id, list[160].id, list[185].id, list[180].id,
                Self.delivery(message).id,
            ])
            #expect(answered == [list[0].id, list[160].id, list[180].id])
        }
    }

    @Test func aPageListsOneMessagesDeliveriesInDeviceOrder() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let dao = DeliveryDAO(database: database)
            let message = ObjectID(), other = ObjectID()
            let devices = (0..<5).map { _ in ObjectID() }
            try await dao.record(
                (devices.map { Self.delivery(message, $0) } + [Self.delivery(other)])
                    .map { DeliveryOutcome($0, state: .sent) })
            let first = try await dao.page(of: message, after: nil, limit: 3)
            #expect(first.map(\.device) == Array(devices.prefix(3)))
            #expect(first.allSatisfy { $0.registration.isEmpty })
            let rest = try await dao.page(of: message, after: first.last?.id, limit: 3)
            #expect(rest.map(\.device) == Array(devices.suffix(2)))
        }
    }

    @Test func aResolutionIsNotedOnlyUnderTheLeaseThatHoldsTheMessage() async throws {
        try await TestDatabase.with { database in
            let messages = database.collection(CollectionName.message)
            let id = ObjectID()
            try await messages.insertOne(["_id": .objectID(id), "relay": ["state": "pending", "lease_owner": "w1/a"]])
            let dao = DeliveryDAO(database: database)
            #expect(try await !dao.markResolved(message: id, lease: "w2/b", count: 3))
            #expect(try await dao.markResolved(message: id, lease: "w1/a", count: 3))
            let stored = try await messages.findOne(["_id": .objectID(id)])
            #expect(stored?[path: "relay.components.devices.resolved"] == true)
            #expect(stored?[path: "relay.components.devices.devices"]?.int64Value == 3)
        }
    }

    @Test func thePersonsActiveDevicesAreFoundAndAGoneTokenMarksItsDevice() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let devices = DeviceDAO(database: database)
            var ids: [String: ObjectID] = [:]
            for (token, person) in [("t1", "ann"), ("t2", "ann"), ("t3", "bob"), ("t4", "cid")] {
                let device = try await devices.register(
                    registration: token, platform: .android, locale: nil,
                    appVersion: nil, secretHash: "-"
                ).device
                _ = try await devices.bind(device.id, person: person)
                ids[token] = device.id
            }
            _ = try await devices.register(
                registration: "unbound", platform: .ios, locale: nil, appVersion: nil,
                secretHash: "-")
            try await devices.markUnregistered(registrations: ["t2"])
            let found = try await devices.active(ofPersons: ["ann", "bob", "nobody"])
            #expect(Set(found.map(\.registration)) == ["t1", "t3"])
            #expect(found.first { $0.registration == "t3" }?.person == "bob")
            #expect(try await devices.get(try #require(ids["t2"])).state == .unregistered)
            // Read as one range of persons: "bob" lies between the two asked for and is left out; "cid" beyond them.
            let ranged = try #require(try await devices.active(inRangeOf: ["ann", "cid", "nobody"]))
            #expect(Set(ranged.map(\.registration)) == ["t1", "t4"])
        }
    }

    /// "p07" for 7: person ids in order.
    static func padded(_ index: Int) -> String { index < 10 ? "p0\(index)" : "p\(index)" }

    @Test func aRangeOfPersonsHoldingMostlyOthersDevicesIsGivenUpForTheList() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let devices = DeviceDAO(database: database)
            for index in 0..<40 {
                let device = try await devices.register(
                    registration: "r\(index)", platform: .android, locale: nil, appVersion: nil, secretHash: "-"
                ).device
                _ = try await devices.bind(device.id, person: Self.padded(index))
            }
            // Two persons at the ends of a range of 40 devices: more than 3 a person asked for, plus 16.
            #expect(try await devices.active(inRangeOf: ["p00", "p39"]) == nil)
            let listed = try await devices.active(ofPersons: ["p00", "p39"])
            #expect(Set(listed.compactMap(\.person)) == ["p00", "p39"])
            // Ten neighbours: within the bound.
            let neighbours = (10..<20).map { Self.padded($0) }
            let ranged = try #require(try await devices.active(inRangeOf: neighbours))
            #expect(Set(ranged.compactMap(\.person)) == Set(neighbours))
        }
    }

    @Test func aMessagesDeliveriesAndTheAnswersOfAnAttemptAreReadOnAnIndexNotTheWholeCollection() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let dao = DeliveryDAO(database: database, now: { 42_000 })
            let messages = (0..<5).map { _ in ObjectID() }
            var lists: [[Delivery]] = []
            for message in messages {
                let list = (0..<300).map { _ in Self.delivery(message) }
                lists.append(list)
                _ = try await dao.record(list.map { DeliveryOutcome($0, state: .sent) })
            }
            let message = messages[2]
            // A page after a cursor: the message's deliveries only (1,500 in the collection).
            let sorted = lists[2].map(\.id).sorted()
            let filter = DeliveryDAO.range(of: message, after: sorted[99])
            #expect(
                try await ClaimQueryTests.examined(
                    filter, sort: ["_id": 1], on: CollectionName.deliveries, in: database) <= 300)
            let page = try await dao.page(of: message, after: sorted[99], limit: 50)
            #expect(page.map(\.id) == Array(sorted[100..<150]))
            #expect(try await dao.counts(of: message).byState[.sent] == 300)
            // What a later attempt leaves out: by `_id` alone, 64 at a time.
            let plan = try await database.runCommand([
                "explain": [
                    "find": .string(CollectionName.deliveries),
                    "filter": ["_id": ["$in": .array(sorted.prefix(64).map(BSONValue.string))]],
                ],
                "verbosity": "executionStats",
            ])
            #expect(try #require(plan[path: "executionStats.totalDocsExamined"]?.int64Value) <= 64)
            #expect(try await dao.answered(Array(sorted.prefix(10)) + ["\(message.hex)/none"]).count == 10)
        }
    }
}
