import DAO
@testable import HubCore
import Mongo
import MongoTestSupport
import Testing

/// The per-address limit on registrations: the shared counter stays the limit while a process takes it a few at
/// a time.
@Suite("Registration throttle")
struct RegistrationThrottleTests {
    /// What the shared counter of `address` says this minute.
    static func counted(_ address: String, in database: MongoDatabase) async throws -> Int64 {
        let minute = UnixTime.nowMilliseconds() / 60_000
        return try await database.collection(CollectionName.rateWindows)
            .findOne(["_id": .string("register:\(address):\(minute)")])?["used"]?.int64Value ?? 0
    }

    @Test func aBurstFromOneAddressCostsTheDatabaseOneCommandPerChunkAndNeverPassesTheLimit() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            // 600 a minute: taken ten at a time.
            let throttle = RegistrationThrottle(rates: RateWindowDAO(database: database))
            #expect(RegistrationThrottle.chunk(perMinute: 600) == 10)
            let minute = UnixTime.nowMilliseconds() / 60_000
            let granted = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<45 {
                    group.addTask { (try? await throttle.mayRegister(from: "10.0.0.1", perMinute: 600)) ?? false }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(granted == 45)
            // Five takes of ten, not forty-five of one (unless the minute turned meanwhile).
            let counted = try await Self.counted("10.0.0.1", in: database)
            #expect(counted == 50 || UnixTime.nowMilliseconds() / 60_000 != minute, "\(counted)")

            // Two processes, one limit: 30 a minute is taken one at a time, and the 31st is refused.
            let first = RegistrationThrottle(rates: RateWindowDAO(database: database))
            let second = RegistrationThrottle(rates: RateWindowDAO(database: database))
            var allowed = 0
            let start = UnixTime.nowMilliseconds() / 60_000
            for index in 0..<40 {
                let throttle = index % 2 == 0 ? first : second
                if try await throttle.mayRegister(from: "10.0.0.2", perMinute: 30) { allowed += 1 }
            }
            #expect(allowed == 30 || UnixTime.nowMilliseconds() / 60_000 != start, "\(allowed)")
        }
    }

    @Test func anIPv6ClientCountsAgainstItsSlash64AndItsSlash48WithAHigherLimit() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let throttle = RegistrationThrottle(rates: RateWindowDAO(database: database))
            func address(_ text: String) throws -> ClientAddress { try #require(ClientAddress(text)) }
            let start = UnixTime.nowMilliseconds() / 60_000
            // 2 a minute per /64, 8 per /48: five /64s of one /48 ask three times each.
            var granted: [Int] = []
            for network in 1...5 {
                var count = 0
                for host in 1...3 {
                    if try await throttle.mayRegister(from: address("2001:db8:5:\(network)::\(host)"), perMinute: 2) {
                        count += 1
                    }
                }
                granted.append(count)
            }
            // Another /48, and IPv4 neighbours, count on their own.
            let elsewhere = try await throttle.mayRegister(from: address("2001:db8:6:1::1"), perMinute: 2)
            var ipv4 = 0
            for host in 1...4 {
                if try await throttle.mayRegister(from: address("198.51.100.\(host)"), perMinute: 2) { ipv4 += 1 }
            }
            guard UnixTime.nowMilliseconds() / 60_000 == start else { return }  // the minute turned: counts restarted
            #expect(granted == [2, 2, 2, 2, 0])
            #expect(elsewhere)
            #expect(ipv4 == 4)
            #expect(try await Self.counted("2001:db8:5::/48", in: database) >= 8)
        }
    }
}
