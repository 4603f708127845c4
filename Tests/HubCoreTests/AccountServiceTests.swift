import DAO
@testable import HubCore
import Mongo
import MongoTestSupport
import Synchronization
import Testing

@Suite("Accounts: one home for users and tokens")
struct AccountServiceTests {
    @Test func fiftyConcurrentCreatesOfOneTokenNameLeaveExactlyOneLiveToken() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let accounts = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4).accounts
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        do {
                            _ = try await accounts.createToken(name: "bulletin-bot", role: .communicator)
                            return true
                        } catch let refusal as AccountRefusal {
                            return refusal.code == .nameTaken ? false : true
                        } catch {
                            return true
                        }
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try await TokenDAO(database: database).live().filter { $0.name == "bulletin-bot" }.count == 1)
            // Once revoked, the name is free again.
            try await accounts.revokeToken("bulletin-bot")
            _ = try await accounts.createToken(name: "bulletin-bot", role: .admin)
            #expect(try await TokenDAO(database: database).live().map(\.role) == [.admin])
        }
    }

    @Test func aPasswordResetEndsTheUsersSessionsButNotTheOwnSessionOfTheAdminDoingIt() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let accounts = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4).accounts
            try await accounts.addUser("ann", role: .communicator, password: "ann-password-1")
            try await accounts.addUser("root", role: .admin, password: "root-password-1")
            let lifetime = SessionLifetime(idle: .seconds(60), maximum: .seconds(3600))
            for (key, user) in [("a", "ann"), ("r", "root")] {
                _ = try await accounts.startSession(key: key, username: user, csrfToken: "c", lifetime: lifetime)
            }
            try await accounts.resetPassword(of: "ann", to: "ann-password-2", by: "root")
            try await accounts.resetPassword(of: "root", to: "root-password-2", by: "root")
            #expect(try await accounts.session(key: "a", lifetime: lifetime) == nil)
            #expect(try await accounts.session(key: "r", lifetime: lifetime)?.user.username == "root")
            #expect(try await accounts.logIn(username: "ann", password: "ann-password-2", from: nil).name == "ann")
            await #expect { try await accounts.logIn(username: "ann", password: "ann-password-1", from: nil) } throws: {
                ($0 as? LoginRefusal)?.code == .invalidCredentials
            }
            // Refusals carry codes: a short password, an unknown user, a bad name, an admin locking themself out.
            await #expect { try await accounts.resetPassword(of: "ann", to: "short") } throws: {
                ($0 as? AccountRefusal)?.code == .weakPassword
            }
            await #expect { try await accounts.resetPassword(of: "nobody") } throws: {
                ($0 as? AccountRefusal)?.code == .userNotFound
            }
            await #expect { try await accounts.addUser("a b", role: .admin) } throws: {
                ($0 as? AccountRefusal)?.code == .invalidName
            }
            await #expect { try await accounts.setDisabled("root", true, by: "root") } throws: {
                ($0 as? AccountRefusal)?.code == .selfLockout
            }
        }
    }
}

@Suite("Accounts: passwords, names and session lifetimes")
struct AccountRulesTests {
    @Test func passwordsHaveTenCharactersAtLeastAndSeventyTwoBytesAtMost() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let accounts = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4).accounts
            func refusal(_ password: String) async -> AccountRefusalCode? {
                do {
                    try await accounts.addUser(
                        "user-\(Secret.make(byteCount: 6))", role: .communicator, password: password)
                    return nil
                } catch {
                    return (error as? AccountRefusal)?.code
                }
            }
            #expect(await refusal("nine-char") == .weakPassword)
            #expect(await refusal("ten-chars!") == nil)
            #expect(await refusal(String(repeating: "a", count: 72)) == nil)
            #expect(await refusal(String(repeating: "a", count: 73)) == .weakPassword)
            // Bytes, not characters: 37 "é" are 74 bytes, of which bcrypt would read 72.
            #expect(await refusal(String(repeating: "é", count: 37)) == .weakPassword)
            #expect(await refusal(String(repeating: "é", count: 36)) == nil)
            #expect(AccountService.passwordProblem(String(repeating: "é", count: 37))?.contains("72") == true)
            try await accounts.addUser("ann", role: .communicator, password: "ann-password-1")
            await #expect {
                try await accounts.resetPassword(of: "ann", to: String(repeating: "x", count: 100))
            } throws: {
                ($0 as? AccountRefusal)?.code == .weakPassword
            }
            // Generated passwords follow the rule they are checked against.
            let generated = try await accounts.resetPassword(of: "ann")
            #expect(AccountService.passwordProblem(generated) == nil)
            #expect(try await accounts.logIn(username: "ann", password: generated, from: nil).name == "ann")
        }
    }

    @Test func aTokenCannotTakeAUsersNameNorAUserALiveTokensName() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let accounts = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4).accounts
            try await accounts.addUser("ann", role: .communicator, password: "ann-password-1")
            await #expect { try await accounts.createToken(name: "ann", role: .admin) } throws: {
                ($0 as? AccountRefusal)?.code == .nameTaken
            }
            #expect(try await TokenDAO(database: database).live().isEmpty)
            _ = try await accounts.createToken(name: "bulletin-bot", role: .communicator)
            await #expect {
                try await accounts.addUser("bulletin-bot", role: .admin, password: "bot-password-1")
            } throws: {
                ($0 as? AccountRefusal)?.code == .nameTaken
            }
            #expect(try await accounts.users().map(\.username) == ["ann"])
            // A revoked token's name is free for a user.
            try await accounts.revokeToken("bulletin-bot")
            try await accounts.addUser("bulletin-bot", role: .communicator, password: "bot-password-1")
        }
    }

    @Test func aSessionEndsTwelveHoursAfterTheLoginHoweverActive() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            // A clock the test moves (starting now, so the TTL monitor never sees these sessions as expired).
            let clock = TestClock(UnixTime.nowMilliseconds())
            let accounts = AccountService(
                database: database, audit: AuditLog(database: database), bcryptCost: 4, now: { clock.now })
            try await accounts.addUser("ann", role: .communicator, password: "ann-password-1")
            let lifetime = SessionLifetime(idle: .seconds(3600), maximum: .seconds(12 * 3600))
            let started = try await accounts.startSession(key: "k", username: "ann", csrfToken: "c", lifetime: lifetime)
            #expect(started.expiresAt == started.createdAt + 3_600_000)
            // A request every 50 minutes keeps the session, and moves its idle expiry, never past the maximum.
            var expiries: [Int64] = []
            while clock.now + 50 * 60_000 < started.createdAt + 12 * 3_600_000 {
                clock.advance(by: 50 * 60_000)
                let found = try #require(try await accounts.session(key: "k", lifetime: lifetime))
                expiries.append(found.session.expiresAt)
            }
            #expect(expiries.count == 14)
            #expect(expiries == expiries.sorted())
            #expect(expiries.allSatisfy { $0 <= started.createdAt + 12 * 3_600_000 })
            #expect(expiries.last == started.createdAt + 12 * 3_600_000)
            // At twelve hours it ends, though it was used minutes ago.
            clock.advance(by: started.createdAt + 12 * 3_600_000 - clock.now)
            #expect(try await accounts.session(key: "k", lifetime: lifetime) == nil)
            // The idle lifetime still applies: an hour without a request ends a fresh session.
            _ = try await accounts.startSession(key: "idle", username: "ann", csrfToken: "c", lifetime: lifetime)
            clock.advance(by: 3_600_001)
            #expect(try await accounts.session(key: "idle", lifetime: lifetime) == nil)
            // A maximum shorter than the idle lifetime bounds a new session from the start.
            let short = SessionLifetime(idle: .seconds(3600), maximum: .seconds(600))
            let brief = try await accounts.startSession(key: "short", username: "ann", csrfToken: "c", lifetime: short)
            #expect(brief.expiresAt == brief.createdAt + 600_000)
        }
    }
}

@Suite("The login policy")
struct LoginPolicyTests {
    /// An account service with small limits (3 per username, 5 per address, a minute) on a clock the test moves.
    static func with(
        _ test: String = #function, concurrentChecks: Int = 2, waitingChecks: Int = 2,
        _ body: @Sendable (AccountService, TestClock, MongoDatabase) async throws -> Void
    ) async throws {
        try await TestDatabase.with(test) { database in
            try await DatabaseIndexes.ensure(in: database)
            let clock = TestClock(UnixTime.nowMilliseconds())
            let limits = LoginLimits(
                perUsername: 3, perAddress: 5, window: .seconds(60),
                concurrentChecks: concurrentChecks, waitingChecks: waitingChecks)
            let accounts = AccountService(
                database: database, audit: AuditLog(database: database), bcryptCost: 4, loginLimits: limits,
                now: { clock.now })
            try await accounts.addUser("admin", role: .admin, password: "admin-password-1")
            try await body(accounts, clock, database)
        }
    }

    static func address(_ text: String) throws -> ClientAddress { try #require(ClientAddress(text)) }

    /// The code of the refusal `logIn` throws, or "in" when it succeeds.
    static func outcome(
        _ accounts: AccountService, _ username: String, _ password: String,
        from address: String
    ) async throws -> String {
        do {
            _ = try await accounts.logIn(username: username, password: password, from: try Self.address(address))
            return "in"
        } catch let refusal as LoginRefusal {
            return refusal.code.description
        }
    }

    @Test func aStrangerCannotLockTheAdminOutAndThrottledAttemptsCostNoCheck() async throws {
        try await Self.with { (accounts, clock, _) async throws in
            let gate = accounts.credentials.gate
            for _ in 1...3 {
                #expect(
                    try await Self.outcome(accounts, "admin", "guess", from: "198.51.100.1") == "invalidCredentials")
            }
            let checks = gate.started
            #expect(try await Self.outcome(accounts, "admin", "guess", from: "198.51.100.1") == "throttled")
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.1") == "throttled")
            #expect(gate.started == checks)
            // The admin's own address has no failures: in.
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "203.0.113.5") == "in")
            #expect(gate.started == checks + 1)
            // A minute later the stranger's failures no longer count.
            clock.advance(by: 60_001)
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.1") == "in")
        }
    }

    @Test func anAddressWithTooManyFailuresIsRefusedForEveryUsername() async throws {
        try await Self.with { (accounts, _, _) async throws in
            for index in 0..<5 {
                #expect(
                    try await Self.outcome(accounts, "name-\(index)", "guess", from: "198.51.100.2")
                        == "invalidCredentials")
            }
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.2") == "throttled")
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.3") == "in")
        }
    }

    @Test func ipv6FailuresCountPerSlash64AndTogetherPerSlash48WithAHigherLimit() async throws {
        try await Self.with { (accounts, _, _) async throws in
            // 5 per address (a /64), 20 per /48: four /64s of one /48 fail five times each (other usernames each
            // time, so that no username's limit plays), each /64 throttled on its own; then the /48 is full, so a
            // fifth /64 of it is refused before its first failure.
            #expect(LoginLimits(perAddress: 5).perSite == 20)
            for network in 1...4 {
                for attempt in 0..<5 {
                    #expect(
                        try await Self.outcome(
                            accounts, "name-\(network)-\(attempt)", "guess",
                            from: "2001:db8:7:\(network)::1") == "invalidCredentials")
                }
                #expect(
                    try await Self.outcome(
                        accounts, "admin", "admin-password-1",
                        from: "2001:db8:7:\(network)::2") == "throttled")
            }
            #expect(
                try await Self.outcome(accounts, "admin", "admin-password-1", from: "2001:db8:7:99::1") == "throttled")
            // Another /48 is not counted with it; nor are IPv4 addresses with their neighbours.
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "2001:db8:8:1::1") == "in")
            for attempt in 0..<5 {
                _ = try await Self.outcome(accounts, "name-v4-\(attempt)", "guess", from: "198.51.100.20")
            }
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.20") == "throttled")
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.21") == "in")
        }
    }

    @Test func aSuccessClearsTheFailuresFromItsAddressAndUnlockClearsThemAll() async throws {
        try await Self.with { accounts, _, database in
            let failures = LoginFailureDAO(database: database)
            for _ in 1...2 { _ = try await Self.outcome(accounts, "admin", "typo", from: "203.0.113.6") }
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "203.0.113.6") == "in")
            for _ in 1...3 { _ = try await Self.outcome(accounts, "admin", "guess", from: "198.51.100.4") }
            // The typos are forgotten; the stranger's failures still count at the stranger's address.
            #expect(try await failures.counts(username: "admin", address: "203.0.113.6", windowMS: 60_000) == (3, 0, 0))
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.4") == "throttled")
            // `msi-hub user unlock admin`
            try await accounts.unlock("admin")
            #expect(try await Self.outcome(accounts, "admin", "admin-password-1", from: "198.51.100.4") == "in")
            await #expect { try await accounts.unlock("nobody") } throws: {
                ($0 as? AccountRefusal)?.code == .userNotFound
            }
        }
    }

    @Test func aFullGateRefusesAtOnceAndALineWaitsItsTurn() async throws {
        try await Self.with(concurrentChecks: 1, waitingChecks: 1) { accounts, _, database in
            let gate = accounts.credentials.gate
            let (release, releaser) = AsyncStream<Void>.makeStream()
            let holder = Task { try await gate.run { for await _ in release {} } }
            while gate.started < 1 { await Task.yield() }
            let lined = Task { try await gate.run { 0 } }
            while gate.queued < 1 { await Task.yield() }
            // Every place taken and the line full: refused at once, with when to retry, not as a failed login.
            await #expect {
                try await accounts.logIn(username: "admin", password: "admin-password-1", from: nil)
            } throws: {
                ($0 as? LoginRefusal)?.code == .busy && ($0 as? LoginRefusal)?.retryAfterSeconds == 1
            }
            #expect(try await database.collection(CollectionName.loginFailures).countDocuments() == 0)
            // A check cancelled in line leaves it; the next one in line runs once the holder is done.
            lined.cancel()
            await #expect(throws: CancellationError.self) { try await lined.value }
            #expect(gate.queued == 0)
            let waiting = Task { try await accounts.logIn(username: "admin", password: "admin-password-1", from: nil) }
            while gate.queued < 1 { await Task.yield() }
            releaser.finish()
            try await holder.value
            #expect(try await waiting.value.name == "admin")
        }
    }
}

/// A clock the test moves, in Unix milliseconds.
final class TestClock: Sendable {
    private let time: Mutex<Int64>

    init(_ start: Int64) { time = Mutex(start) }

    var now: Int64 { time.withLock { $0 } }

    func advance(by milliseconds: Int64) { time.withLock { $0 += milliseconds } }
}

@Suite("Following the database")
struct DatabaseFollowerTests {
    @Test func onlyAServerWithoutChangeStreamsSwitchesToPolling() {
        #expect(DatabaseFollower.fallsBackToPolling(after: MongoError(.unsupported, "no change streams")))
        // A transient failure (a dropped cursor, an interrupted command, a lost connection) opens the stream again.
        #expect(!DatabaseFollower.fallsBackToPolling(after: MongoError(.commandFailed, "cursor not found")))
        #expect(!DatabaseFollower.fallsBackToPolling(after: MongoError(.network, "connection reset")))
        #expect(!DatabaseFollower.fallsBackToPolling(after: DAOError(.unavailable, "the database is unavailable")))
    }
}
