import DAO
@testable import HubCore
import Mongo
import MongoTestSupport
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
            for (key, user) in [("a", "ann"), ("r", "root")] {
                _ = try await accounts.sessions.create(key: key, username: user, csrfToken: "c", lifetimeMS: 60_000)
            }
            try await accounts.resetPassword(of: "ann", to: "ann-password-2", by: "root")
            try await accounts.resetPassword(of: "root", to: "root-password-2", by: "root")
            #expect(try await accounts.sessions.find(key: "a") == nil)
            #expect(try await accounts.sessions.find(key: "r") != nil)
            #expect(try await accounts.credentials.identity(username: "ann", password: "ann-password-2")?.name == "ann")
            #expect(try await accounts.credentials.identity(username: "ann", password: "ann-password-1") == nil)
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
