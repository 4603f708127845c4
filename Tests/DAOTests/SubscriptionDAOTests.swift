import DAO
import Mongo
import MongoTestSupport
import Testing

/// The reconciler's side of `SubscriptionDAO`: claims and their outcomes over batches larger than one command names.
@Suite("Subscription claims")
struct SubscriptionDAOTests {
    /// Registers `count` devices, each wanting `topics`; returns them and the DAO.
    func seed(_ database: MongoDatabase, devices count: Int, topics: [String]) async throws -> ([Device], SubscriptionDAO) {
        try await DatabaseIndexes.ensure(in: database)
        let devices = DeviceDAO(database: database), subscriptions = SubscriptionDAO(database: database)
        var registered: [Device] = []
        for index in 0..<count {
            let (device, _) = try await devices.register(registration: "reg-\(index)", platform: .ios, locale: nil,
                                                         appVersion: nil, secretHash: "h")
            try await subscriptions.wantNew(topics, for: device)
            registered.append(device)
        }
        return (registered, subscriptions)
    }

    @Test func concurrentClaimsOfMoreThanOneCommandsIdsNeverShareASubscription() async throws {
        try await TestDatabase.with { database in
            let (_, subscriptions) = try await seed(database, devices: 150, topics: ["t1", "t2"])
            let claimed = try await withThrowingTaskGroup(of: [ObjectID].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var mine: [ObjectID] = []
                        while case let batch = try await subscriptions.claim(owner: "w\(worker)", limit: 100, leaseMS: 60_000),
                              !batch.isEmpty {
                            mine += batch.map(\.id)
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: [ObjectID]()) { $0 += $1 }
            }
            #expect(claimed.count == 300, "every one of the 300 is claimed once")
            #expect(Set(claimed).count == claimed.count, "no subscription is claimed twice")
            #expect(try await subscriptions.claim(owner: "late", limit: 500, leaseMS: 60_000).isEmpty)
        }
    }

    @Test func appliedSettlesWhatDidNotChangeAndKeepsAChangedWishPending() async throws {
        try await TestDatabase.with { database in
            let (devices, subscriptions) = try await seed(database, devices: 100, topics: ["t1"])
            let batch = try await subscriptions.claim(owner: "w", limit: 500, leaseMS: 60_000)
            #expect(batch.count == 100)
            // While FCM is called, device 7 leaves the topic.
            let leaving = devices[7]
            try await subscriptions.set(want: false, topics: ["t1"], for: leaving)
            try await subscriptions.applied(batch)

            let backlog = try await subscriptions.backlog()
            #expect(backlog.count == 1, "only the changed wish is still pending")
            let changed = try #require(try await subscriptions.all(of: leaving).first)
            #expect(changed.applied && !changed.want, "FCM has what was applied; the new wish waits for the next claim")
            let next = try await subscriptions.claim(owner: "w", limit: 500, leaseMS: 60_000)
            #expect(next.map(\.id) == [changed.id] && next.first?.want == false)
            let settled = try #require(try await subscriptions.all(of: devices[8]).first)
            #expect(settled.applied && settled.want)
        }
    }
}
