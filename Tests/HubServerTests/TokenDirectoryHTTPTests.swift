import DAO
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The hub's token checks from memory, over HTTP (the memory's rules: HubCoreTests' TokenDirectoryTests).
@Suite("API tokens checked from memory, over HTTP")
struct TokenDirectoryHTTPTests {
    @Test func aTokenMadeOrRevokedByAnotherProcessWorksAtOnceAndStopsWorking() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            // An empty body: refused for what it is (422), not for who sent it, while the token lives.
            let accepted = try await hub.request(.post, "/message", as: .communicator, json: "{}")
            #expect(accepted.status != .unauthorized)

            // A token made by `msi-hub token create` in another process works at once.
            let (secret, hash) = Credentials.newToken()
            _ = try await TokenDAO(database: hub.database).add(name: "cli-made", role: .communicator, secretHash: hash)
            #expect(try await hub.request(.post, "/message", as: .token(secret), json: "{}").status != .unauthorized)

            // Revoked as `msi-hub token revoke` would, in the database only: refused once the memory follows.
            try await TokenDAO(database: hub.database).revoke(nameOrID: "bulletin-bot")
            try await eventually("the revoked token refused") {
                try await hub.request(.post, "/message", as: .communicator, json: "{}").status == .unauthorized
            }
        }
    }
}
