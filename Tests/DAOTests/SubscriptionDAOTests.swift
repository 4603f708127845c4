import DAO
import Mongo
import MongoTestSupport
import Synchronization
import Testing

/// The reconciler's side of `SubscriptionDAO` (due subscriptions and their outcomes over batches larger than one
/// command names) and the lease that lets one process at a time apply them.
@Suite("Subscription batches and the reconciler's lease")
struct SubscriptionDAOTests {
    /// Registers `count` devices, each wanting `topics`; returns them and the DAO.
    func seed(_ database: MongoDatabase, devices count: Int, topics: [String]) async throws -> (
        [Device], SubscriptionDAO
    ) {
        try await DatabaseIndexes.ensure(in: database)
        let devices = DeviceDAO(database: database), subscriptions = SubscriptionDAO(database: database)
        var registered: [Device] = []
        for index in 0..<count {
            let (device, _) = try await devices.register(
                registration: "reg-\(index)", platform: .ios, locale: nil,
                appVersion: nil, secretHash: "h")
            try await subscriptions.wantNew(topics, for: device)
            registered.append(device)
        }
        return (registered, subscriptions)
    }

    @Test func oneProcessAtATimeHoldsALeaseAndAnotherTakesItOnceItRunsOut() async throws {
        try await TestDatabase.with { database in
            var clock: Int64 = 1_000_000
            let time = Mutex(clock)
            let leases = LeaseDAO(database: database, now: { time.withLock { $0 } })
            let first = try #require(try await leases.hold("job", owner: "a", leaseMS: 1_000))
            #expect(first == clock + 1_000)
            #expect(try await leases.hold("job", owner: "b", leaseMS: 1_000) == nil, "held by a")
            clock += 600
            time.withLock { $0 = clock }
            #expect(try await leases.hold("job", owner: "a", leaseMS: 1_000) == clock + 1_000, "a renews its own")
            clock += 1_001
            time.withLock { $0 = clock }
            #expect(
                try await leases.hold("job", owner: "b", leaseMS: 1_000) == clock + 1_000, "a's ran out: b takes it")
            #expect(try await leases.hold("job", owner: "a", leaseMS: 1_000) == nil)
            try await leases.release("job", owner: "a")  // not a's any more: changes nothing
            #expect(try await leases.hold("job", owner: "a", leaseMS: 1_000) == nil)
            try await leases.release("job", owner: "b")
            #expect(try await leases.hold("job", owner: "a", leaseMS: 1_000) != nil, "given up: free at once")
        }
    }

    @Test func appliedSettlesWhatDidNotChangeAndKeepsAChangedWishPending() async throws {
        try await TestDatabase.with { database in
            let (devices, subscriptions) = try await seed(database, devices: 100, topics: ["t1"])
            let batch = try await subscriptions.due(limit: 500)
            #expect(batch.count == 100)
            // While FCM is called, device 7 leaves the topic.
            let leaving = devices[7]
            try await subscriptions.set(want: false, topics: ["t1"], for: leaving)
            try await subscriptions.applied(batch)

            let backlog = try await subscriptions.backlog()
            #expect(backlog.count == 1, "only the changed wish is still pending")
            let changed = try #require(try await subscriptions.all(of: leaving).first)
            #expect(changed.applied && !changed.want, "FCM has what was applied; the new wish waits for the next claim")
            let next = try await subscriptions.due(limit: 500)
            #expect(next.map(\.id) == [changed.id] && next.first?.want == false)
            let settled = try #require(try await subscriptions.all(of: devices[8]).first)
            #expect(settled.applied && settled.want)
        }
    }

    @Test func aRecordWrittenAfterFCMCalledTheRegistrationGoneLeavesItAsleep() async throws {
        try await TestDatabase.with { database in
            let (devices, subscriptions) = try await seed(database, devices: 2, topics: ["t1", "t2"])
            let batch = try await subscriptions.due(limit: 10)
            // FCM took t1 of device 0, then called its registration gone on t2, before t1's record was written.
            try await subscriptions.sleep(registration: devices[0].registration)
            try await subscriptions.applied(batch)

            let asleep = try await subscriptions.all(of: devices[0])
            #expect(
                asleep.count == 2 && asleep.allSatisfy { !$0.applied },
                "FCM has nothing for a registration it called gone")
            #expect(try await subscriptions.all(of: devices[1]).allSatisfy(\.applied))
            #expect(try await subscriptions.backlog().count == 0)
            // Registered again: both are applied again.
            try await subscriptions.wake(registration: devices[0].registration)
            #expect(try await subscriptions.due(limit: 10).count == 2)
        }
    }

    @Test func aRolloutPageReadsOnlyTheWishesOfItsOwnDevices() async throws {
        try await TestDatabase.with { database in
            // An index of an earlier version is retired at start-up.
            let collection = database.collection(CollectionName.subscriptions)
            try await collection.createIndexes([IndexModel(keys: ["topic": 1, "want": 1], name: "topic.want")])
            let (devices, subscriptions) = try await seed(database, devices: 12, topics: [])
            let names =
                try await database.runCommand(["listIndexes": .string(CollectionName.subscriptions)])[
                    path: "cursor.firstBatch"]?.arrayValue?.compactMap { $0.documentValue?["name"]?.stringValue } ?? []
            #expect(names.contains("topic.device") && !names.contains("topic.want"))

            // Every other device has a wish for t1 (an opt-out among them); one has only t2.
            for (index, device) in devices.enumerated() where index.isMultiple(of: 2) {
                try await subscriptions.set(want: index != 4, topics: ["t1"], for: device)
            }
            try await subscriptions.wantNew(["t2"], for: devices[5])
            let page = devices[3...8]
            let wishing = try await subscriptions.registrations(
                wishing: "t1", devices: page.first!.id,
                through: page.last!.id)
            #expect(
                wishing == Set([4, 6, 8].map { devices[$0].registration }),
                "the page's wishes either way, none of another page's or another topic's")
        }
    }
}
