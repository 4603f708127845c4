import DAO
@testable import HubCore
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

            let follower = DatabaseFollower(
                database: database,
                copies: [
                    FollowedCopy(
                        collection: CollectionName.tokens, reload: directory.refresh, freshness: directory.freshness)
                ], logger: Logger(label: "test"))
            let following = Task { await follower.run() }
            defer { following.cancel() }
            try await eventually("the followed memory holds the token") {
                directory.token(secretHash: hash)?.name == "notice-board"
            }

            let (_, laterHash) = Credentials.newToken()
            _ = try await tokens.add(name: "late", role: .admin, secretHash: laterHash)
            try await eventually("the memory holds the token added later") {
                directory.token(secretHash: laterHash)?.role == .admin
            }

            // Revoked elsewhere: once the database confirmed the memory as of a moment after the revocation, the
            // memory no longer holds the token (what makes "within a second" true is that order, and a memory
            // unconfirmed for a second not being trusted: FreshnessTests).
            try await tokens.revoke(nameOrID: "notice-board")
            let revoked = ContinuousClock.now
            try await eventually("the memory confirmed after the revocation") {
                FreshnessTests.isConfirmed(directory.freshness, after: revoked)
            }
            #expect(directory.token(secretHash: hash) == nil)
            // That nil was the memory's answer, not "too old, ask the database": it still holds the live token
            // (unless a stalled machine let the confirmation age past a second since).
            #expect(directory.token(secretHash: laterHash)?.role == .admin || !directory.freshness.isCurrent)
            #expect(secret.hasPrefix(Credentials.tokenPrefix))
        }
    }

    @Test func aMemoryTheDatabaseHasNotConfirmedLatelyIsNotTrusted() async throws {
        try await TestDatabase.with { database in
            let tokens = TokenDAO(database: database)
            let (_, hash) = Credentials.newToken()
            _ = try await tokens.add(name: "notice-board", role: .communicator, secretHash: hash)
            let directory = TokenDirectory(tokens: tokens)
            try await directory.refresh()
            // Followed, last confirmed two seconds ago: older than the second a copy may go unconfirmed.
            directory.freshness.confirm(asOf: .now - .seconds(2))
            #expect(directory.freshness.isFollowed)
            #expect(directory.token(secretHash: hash) == nil)
        }
    }
}
