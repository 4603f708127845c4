import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The right `direct` (to send to persons directly): stored as `direct: true` on a user or token document, read into
/// the caller's `Identity`, given by `msi-hub token create --direct`, `user add --direct`, `user role --direct` and the
/// portal's "may message persons directly" boxes.
@Suite struct DirectRightTests {
    @Test func theRightRoundTripsThroughTheDocumentsAndReachesTheIdentity() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let users = UserDAO(database: database)
            let tokens = TokenDAO(database: database)
            let credentials = Credentials(users: users, tokens: tokens, bcryptCost: 4)
            _ = try await users.add(username: "dora", passwordHash: "x", role: .communicator, direct: true)
            _ = try await users.add(username: "eve", passwordHash: "x", role: .communicator)
            let usersCollection = database.collection(CollectionName.users)
            #expect(try await usersCollection.findOne(["username": "dora"])?["direct"]?.boolValue == true)
            #expect(try await usersCollection.findOne(["username": "eve"])?["direct"] == nil)
            #expect(try await users.get(username: "dora").direct)
            #expect(try await users.get(username: "eve").direct == false)

            try await users.setDirect(username: "eve", true)
            try await users.setDirect(username: "dora", false)
            #expect(try await usersCollection.findOne(["username": "eve"])?["direct"]?.boolValue == true)
            #expect(try await usersCollection.findOne(["username": "dora"])?["direct"] == nil)
            await #expect(throws: DAOError.self) { try await users.setDirect(username: "nobody", true) }

            let (secret, hash) = Credentials.newToken()
            _ = try await tokens.add(name: "roster-bot", role: .communicator, secretHash: hash, direct: true)
            let (plainSecret, plainHash) = Credentials.newToken()
            _ = try await tokens.add(name: "news-bot", role: .communicator, secretHash: plainHash)
            let stored = try #require(
                try await database.collection(CollectionName.tokens).findOne(["name": "roster-bot"]))
            #expect(stored["direct"]?.boolValue == true)
            #expect(try await tokens.live(named: "roster-bot")?.direct == true)
            #expect(try await credentials.identity(token: secret)?.direct == true)
            #expect(try await credentials.identity(token: plainSecret)?.direct == false)
        }
    }

    @Test func theCommandLineGivesTheRightToTokensAndUsers() async throws {
        try await HubHarness.with { hub in
            let uri = try HubProcess.uri(of: hub.database)
            #expect(
                try await CommandLineTests.run(["token", "create", "--help"], input: "").output.contains("--direct"))
            let created = try await CommandLineTests.run(
                [
                    "token", "create", "--name", "roster-bot", "--direct",
                    "--mongodb-uri", uri,
                ], input: "")
            #expect(created.status == 0, "\(created.output)")
            let secret = created.output.split(separator: "\n").last.map(String.init) ?? ""
            let whoAmI = try await hub.request(.get, "/group", as: .token(secret))
            #expect(whoAmI.status == .forbidden)  // a communicator token: it works, and the right is no role
            let tokens = hub.database.collection(CollectionName.tokens)
            #expect(try await tokens.findOne(["name": "roster-bot"])?["direct"]?.boolValue == true)
            #expect(
                try await CommandLineTests.run(
                    ["token", "create", "--name", "news-bot", "--mongodb-uri", uri],
                    input: ""
                ).status == 0)
            #expect(try await tokens.findOne(["name": "news-bot"])?["direct"] == nil)

            let added = try await CommandLineTests.run(
                ["user", "add", "dora", "--direct", "--mongodb-uri", uri],
                input: "dora-password-1\n")
            #expect(added.status == 0, "\(added.output)")
            let users = hub.database.collection(CollectionName.users)
            #expect(try await users.findOne(["username": "dora"])?["direct"]?.boolValue == true)

            // `user role` leaves the right alone unless told: --direct gives it, --no-direct takes it.
            #expect(
                try await CommandLineTests.run(
                    ["user", "role", "ann", "communicator", "--mongodb-uri", uri],
                    input: ""
                ).status == 0)
            #expect(try await users.findOne(["username": "ann"])?["direct"] == nil)
            #expect(
                try await CommandLineTests.run(
                    [
                        "user", "role", "ann", "communicator", "--direct",
                        "--mongodb-uri", uri,
                    ], input: ""
                ).status == 0)
            #expect(try await users.findOne(["username": "ann"])?["direct"]?.boolValue == true)
            #expect(
                try await CommandLineTests.run(
                    [
                        "user", "role", "ann", "communicator", "--no-direct",
                        "--mongodb-uri", uri,
                    ], input: ""
                ).status == 0)
            #expect(try await users.findOne(["username": "ann"])?["direct"] == nil)
            #expect(
                try await CommandLineTests.run(["user", "list", "--mongodb-uri", uri], input: "").output
                    .contains("dora\tcommunicator\tactive\tdirect"))
        }
    }

    @Test func thePortalsBoxesGiveAndTakeTheRight() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let usersPage = try await root.get("/portal/admin/users")
            #expect(usersPage.text.contains("May message persons directly"))
            let csrf = try PortalBrowser.csrf(in: usersPage)
            let users = hub.database.collection(CollectionName.users)

            let added = try await root.post(
                "/portal/admin/users",
                [
                    "_csrf": csrf, "username": "dora",
                    "role": "communicator", "direct": "on",
                ])
            #expect(added.status == .ok)
            #expect(try await users.findOne(["username": "dora"])?["direct"]?.boolValue == true)
            _ = try await root.post("/portal/admin/users", ["_csrf": csrf, "username": "eve", "role": "communicator"])
            #expect(try await users.findOne(["username": "eve"])?["direct"] == nil)
            // A refused form keeps the box as it was ticked.
            let refused = try await root.post(
                "/portal/admin/users",
                [
                    "_csrf": csrf, "username": "bad name",
                    "role": "communicator", "direct": "on",
                ])
            #expect(refused.status == .unprocessableContent)
            #expect(refused.text.contains(#"id="direct" name="direct" type="checkbox" value="on" checked"#))

            // On an existing user: the box ticked gives the right, unticked takes it; ann's session sees it at once.
            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            let annID = try #require(try await users.findOne(["username": "ann"])?["_id"]?.objectIDValue)
            let given = try await root.post("/portal/admin/users/\(annID.hex)/direct", ["_csrf": csrf, "direct": "on"])
            #expect(given.headers[.location] == "/portal/admin/users?done=direct")
            #expect(try await users.findOne(["username": "ann"])?["direct"]?.boolValue == true)
            #expect(try await ann.get("/portal").status == .ok)
            _ = try await root.post("/portal/admin/users/\(annID.hex)/direct", ["_csrf": csrf])
            #expect(try await users.findOne(["username": "ann"])?["direct"] == nil)
            #expect(
                try await root.post("/portal/admin/users/\(annID.hex)/direct", ["direct": "on"]).status == .forbidden)

            let tokensPage = try await root.get("/portal/admin/tokens")
            #expect(tokensPage.text.contains("May message persons directly"))
            let created = try await root.post(
                "/portal/admin/tokens",
                [
                    "_csrf": csrf, "name": "roster-bot",
                    "role": "communicator", "direct": "on",
                ])
            #expect(created.status == .ok)
            let tokens = hub.database.collection(CollectionName.tokens)
            #expect(try await tokens.findOne(["name": "roster-bot"])?["direct"]?.boolValue == true)
            _ = try await root.post(
                "/portal/admin/tokens", ["_csrf": csrf, "name": "news-bot", "role": "communicator"])
            #expect(try await tokens.findOne(["name": "news-bot"])?["direct"] == nil)
            #expect(try await root.get("/portal/admin/tokens").text.contains(#"<span class="badge">direct</span>"#))
        }
    }
}
