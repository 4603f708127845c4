import DAO
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Logging
import Mongo
import MongoTestSupport
import Testing

@Suite("API tokens checked from memory")
struct TokenDirectoryTests {
    @Test func theMemoryFollowsTokensAddedAndRevokedElsewhere() async throws {
        try await TestDatabase.with { database in
            let tokens = TokenDAO(database: database)
            let (secret, hash) = Credentials.newToken()
            _ = try await tokens.add(name: "notice-board", role: .communicator, secretHash: hash)
            let directory = TokenDirectory(tokens: tokens)
            try await directory.refresh()
            // Not followed yet: the memory is not trusted, the database decides.
            #expect(directory.token(secretHash: hash) == nil)

            let follower = DatabaseFollower(database: database, copies: [
                FollowedCopy(collection: CollectionName.tokens, reload: directory.refresh, freshness: directory.freshness),
            ], logger: Logger(label: "test"))
            let following = Task { await follower.run() }
            defer { following.cancel() }
            try await Self.within(.seconds(1)) { directory.token(secretHash: hash)?.name == "notice-board" }

            let (_, laterHash) = Credentials.newToken()
            _ = try await tokens.add(name: "late", role: .admin, secretHash: laterHash)
            try await Self.within(.seconds(1)) { directory.token(secretHash: laterHash)?.role == .admin }

            try await tokens.revoke(nameOrID: "notice-board")
            try await Self.within(.seconds(1)) { directory.token(secretHash: hash) == nil }
            #expect(secret.hasPrefix(Credentials.tokenPrefix))
        }
    }

    @Test func aTokenRevokedByAnotherProcessStopsWorkingWithinASecond() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            // An empty body: refused for what it is (422), not for who sent it, while the token lives.
            let accepted = try await hub.request(.post, "/message", as: .communicator, json: "{}")
            #expect(accepted.status != .unauthorized)

            // A token made by `msi-hub token create` in another process works at once.
            let (secret, hash) = Credentials.newToken()
            _ = try await TokenDAO(database: hub.database).add(name: "cli-made", role: .communicator, secretHash: hash)
            #expect(try await hub.request(.post, "/message", as: .token(secret), json: "{}").status != .unauthorized)

            // Revoked as `msi-hub token revoke` would, in the database only.
            try await TokenDAO(database: hub.database).revoke(nameOrID: "bulletin-bot")
            let staleness = try await Staleness.measure {
                try await hub.request(.post, "/message", as: .communicator, json: "{}").status == .unauthorized
            }
            #expect(staleness.seen)
            #expect(staleness.lastMiss < .seconds(1))
        }
    }

    /// Waits until `condition` holds, failing the test when it does not within `limit`.
    static func within(_ limit: Duration, _ condition: () -> Bool) async throws {
        let clock = ContinuousClock()
        let started = clock.now
        while !condition() {
            guard clock.now - started < limit else {
                Issue.record("the condition did not hold within \(limit)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
