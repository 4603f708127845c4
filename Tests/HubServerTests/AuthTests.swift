import DAO
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("Who may do what")
struct AuthTests {
    /// Every write route, with a body it would accept.
    static let writes: [(HTTPRequest.Method, String, String?)] = [
        (.post, "/channel", #"{"name": "n", "desc": "d"}"#),
        (.put, "/channel/\(Legacy.channelID.hex)", #"{"name": "n", "desc": "d"}"#),
        (.delete, "/channel/\(Legacy.channelID.hex)", nil),
        (.post, "/area/\(Legacy.channelID.hex)", #"{"name": "n", "desc": "d"}"#),
        (.put, "/area/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)", #"{"name": "n", "desc": "d"}"#),
        (.delete, "/area/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)", nil),
        (.post, "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)", #"{"name": "n", "desc": "d", "opt": {"level": "", "distribution": "Alert"}}"#),
        (.put, "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)/\(Legacy.hoursID.hex)", #"{"name": "n", "desc": "d", "opt": {"level": "", "distribution": "Alert"}}"#),
        (.delete, "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)/\(Legacy.hoursID.hex)", nil),
        (.post, "/message", #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"}"#),
    ]

    @Test func everyWriteNeedsCredentials() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let before = try await hub.cubeSnapshot()
            for (method, path, body) in Self.writes {
                let response = try await hub.request(method, path, json: body)
                #expect(response.status == .unauthorized, "\(method) \(path)")
                #expect(response.errorCode == "unauthenticated")
                #expect(response.headers[.wwwAuthenticate] != nil)
                let wrong = try await hub.request(method, path, as: .token("msi_not-a-real-token"), json: body)
                #expect(wrong.status == .unauthorized, "\(method) \(path)")
            }
            #expect(try await hub.cubeSnapshot() == before)
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }

    @Test func cubeWritesNeedTheAdminRole() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let before = try await hub.cubeSnapshot()
            for (method, path, body) in Self.writes where path != "/message" {
                let response = try await hub.request(method, path, as: .communicator, json: body)
                #expect(response.status == .forbidden, "\(method) \(path)")
                #expect(response.errorCode == "forbidden")
            }
            #expect(try await hub.cubeSnapshot() == before)
        }
    }

    @Test func basicAuthChecksTheBcryptPasswordAndTheDisabledFlag() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let body = #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"}"#
            let ok = try await hub.request(.post, "/message", as: .basic("ann", HubHarness.annPassword), json: body)
            #expect(ok.status == .created)
            #expect(try ok.json()["sender"] == "ann")
            let wrong = try await hub.request(.post, "/message", as: .basic("ann", "wrong-password"), json: body)
            #expect(wrong.status == .unauthorized)
            let nobody = try await hub.request(.post, "/message", as: .basic("nobody", "whatever1"), json: body)
            #expect(nobody.status == .unauthorized)
            let stored = try #require(try await hub.database.collection(CollectionName.users).findOne(["username": "ann"]))
            #expect(stored["password_hash"]?.stringValue?.hasPrefix("$2") == true)
            try await UserDAO(database: hub.database).setDisabled(username: "ann", true)
            let disabled = try await hub.request(.post, "/message", as: .basic("ann", HubHarness.annPassword), json: body)
            #expect(disabled.status == .unauthorized)
        }
    }

    @Test func tokensAreStoredHashedAndStopWorkingWhenRevoked() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let tokens = TokenDAO(database: hub.database)
            let (secret, hash) = Credentials.newToken()
            #expect(secret.hasPrefix("msi_") && secret.count > 40)
            _ = try await tokens.add(name: "script", role: .admin, secretHash: hash)
            let raw = try #require(try await hub.database.collection(CollectionName.tokens).findOne(["name": "script"]))
            #expect(!LegacyJSONWriter().string(raw).contains(secret))
            let body = #"{"name": "n", "desc": "d"}"#
            #expect(try await hub.request(.post, "/channel", as: .token(secret), json: body).status == .created)
            #expect(try await tokens.list().first { $0.name == "script" }?.lastUsedAt != nil)
            // Revoked in the database (as another process would): refused within a second.
            try await tokens.revoke(nameOrID: "script")
            let staleness = try await Staleness.measure {
                try await hub.request(.post, "/channel", as: .token(secret), json: "{}").status == .unauthorized
            }
            #expect(staleness.seen)
            #expect(staleness.lastMiss < .seconds(1))
            let again = await #expect(throws: DAOError.self) { try await tokens.revoke(nameOrID: "script") }
            #expect(again?.code == .tokenNotFound)
        }
    }

    @Test func communicatorsSendOnlyWhereEveryAccessListNamesThem() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let body = #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"}"#
            let area = "/area/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)"
            #expect(try await hub.request(.put, area, as: .admin, json: #"{"name": "Library", "desc": "d", "access": ["ann"]}"#).status == .ok)
            let denied = try await hub.request(.post, "/message", as: .communicator, json: body)
            #expect(denied.status == .forbidden)
            #expect(denied.errorCode == "subject_access_denied")
            #expect(try await hub.request(.post, "/message", as: .basic("ann", HubHarness.annPassword), json: body).status == .created)
            #expect(try await hub.request(.post, "/message", as: .admin, json: body).status == .created)
            let channel = "/channel/\(Legacy.channelID.hex)"
            #expect(try await hub.request(.put, channel, as: .admin, json: #"{"name": "Campus", "desc": "d", "access": ["bob"]}"#).status == .ok)
            #expect(try await hub.request(.post, "/message", as: .basic("ann", HubHarness.annPassword), json: body).status == .forbidden)
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 2)
        }
    }

    @Test func identitiesFollowTheAccessRule() {
        let ann = Identity(name: "ann", role: .communicator, kind: .user)
        #expect(ann.maySend(through: [[], [], []]))
        #expect(ann.maySend(through: [["ann", "bob"], [], ["ann"]]))
        #expect(!ann.maySend(through: [[], ["bob"], []]))
        #expect(Identity(name: "root", role: .admin, kind: .token).maySend(through: [["bob"], ["bob"], ["bob"]]))
    }
}
