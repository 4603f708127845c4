import DAO
import Foundation
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
        (
            .post, "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)",
            #"{"name": "n", "desc": "d", "opt": {"level": "", "distribution": "Alert"}}"#
        ),
        (
            .put, "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)/\(Legacy.hoursID.hex)",
            #"{"name": "n", "desc": "d", "opt": {"level": "", "distribution": "Alert"}}"#
        ),
        (.delete, "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)/\(Legacy.hoursID.hex)", nil),
        (
            .post, "/message",
            #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"}"#
        ),
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
            let body =
                #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"}"#
            let ok = try await hub.request(.post, "/message", as: .basic("ann", HubHarness.annPassword), json: body)
            #expect(ok.status == .created)
            #expect(try ok.json()["sender"] == "ann")
            let wrong = try await hub.request(.post, "/message", as: .basic("ann", "wrong-password"), json: body)
            #expect(wrong.status == .unauthorized)
            let nobody = try await hub.request(.post, "/message", as: .basic("nobody", "whatever1"), json: body)
            #expect(nobody.status == .unauthorized)
            let stored = try #require(
                try await hub.database.collection(CollectionName.users).findOne(["username": "ann"]))
            #expect(stored["password_hash"]?.stringValue?.hasPrefix("$2") == true)
            try await UserDAO(database: hub.database).setDisabled(username: "ann", true)
            let disabled = try await hub.request(
                .post, "/message", as: .basic("ann", HubHarness.annPassword), json: body)
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
            // Revoked in the database (as another process would): refused once the memory follows (how soon:
            // HubCoreTests' TokenDirectoryTests and FreshnessTests).
            try await tokens.revoke(nameOrID: "script")
            try await eventually("the revoked token refused") {
                try await hub.request(.post, "/channel", as: .token(secret), json: "{}").status == .unauthorized
            }
            let again = await #expect(throws: DAOError.self) { try await tokens.revoke(nameOrID: "script") }
            #expect(again?.code == .tokenNotFound)
        }
    }

    @Test func communicatorsSendOnlyWhereEveryAccessListNamesThem() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let body =
                #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"}"#
            let area = "/area/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)"
            #expect(
                try await hub.request(
                    .put, area, as: .admin, json: #"{"name": "Library", "desc": "d", "access": ["ann"]}"#
                ).status == .ok)
            let denied = try await hub.request(.post, "/message", as: .communicator, json: body)
            #expect(denied.status == .forbidden)
            #expect(denied.errorCode == "subject_access_denied")
            #expect(
                try await hub.request(.post, "/message", as: .basic("ann", HubHarness.annPassword), json: body).status
                    == .created)
            #expect(try await hub.request(.post, "/message", as: .admin, json: body).status == .created)
            let channel = "/channel/\(Legacy.channelID.hex)"
            #expect(
                try await hub.request(
                    .put, channel, as: .admin, json: #"{"name": "Campus", "desc": "d", "access": ["bob"]}"#
                ).status == .ok)
            #expect(
                try await hub.request(.post, "/message", as: .basic("ann", HubHarness.annPassword), json: body).status
                    == .forbidden)
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 2)
        }
    }

    // MARK: The login policy over HTTP

    /// A hub (the real router over services the test holds) that trusts 127.0.0.1 as its proxy, so requests
    /// name their client address in `X-Forwarded-For`; ann's password is `HubHarness.annPassword`.
    static func withLoginHub(
        _ test: String = #function,
        _ body: @Sendable (HubHarness, AccountService) async throws -> Void
    ) async throws {
        try await TestDatabase.with(test) { database in
            try await DatabaseIndexes.ensure(in: database)
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4)
            try await services.accounts.addUser("ann", role: .communicator, password: HubHarness.annPassword)
            let router = buildRouter(services: services, trustedProxies: try TrustedProxies(parsing: "127.0.0.1/32"))
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            try await app.test(.live) { client in
                try await body(HubHarness(database: database, client: client), services.accounts)
            }
        }
    }

    /// A request authenticated by HTTP Basic, from `client` (through the trusted proxy) or from the peer itself.
    static func basic(
        _ hub: HubHarness, _ user: String, _ password: String, from client: String? = nil,
        uri: String = "/healthz"
    ) async throws -> TestResponse {
        var headers = HubHarness.Caller.basic(user, password).headers
        if let client { headers[.xForwardedFor] = client }
        return try await hub.client.execute(uri: uri, method: .get, headers: headers, body: nil)
    }

    @Test func thirtyWrongBasicPasswordsGet429PastTheLimitWithoutBcryptWhileTheRightPasswordFromElsewhereWorks()
        async throws
    {
        try await Self.withLoginHub { hub, accounts in
            let checks = accounts.credentials.gate.started
            var statuses: [HTTPResponse.Status] = []
            for _ in 1...30 {
                let response = try await Self.basic(hub, "ann", "wrong-password", from: "198.51.100.7")
                statuses.append(response.status)
                if response.status == .tooManyRequests {
                    #expect(response.headers[.retryAfter] == "60")
                    #expect(response.errorCode == "too_many_requests")
                }
            }
            #expect(
                statuses == Array(repeating: .unauthorized, count: 5) + Array(repeating: .tooManyRequests, count: 25))
            // Five password checks: none once the limit was reached.
            #expect(accounts.credentials.gate.started - checks == 5)
            // The right password waits out the limit at that address, and costs no check either ...
            #expect(
                try await Self.basic(hub, "ann", HubHarness.annPassword, from: "198.51.100.7").status
                    == .tooManyRequests)
            #expect(accounts.credentials.gate.started - checks == 5)
            // ... while from an address without failures ann gets in: the stranger did not lock her out.
            let elsewhere = try await Self.basic(
                hub, "ann", HubHarness.annPassword, from: "203.0.113.20",
                uri: "/audience?topic_key=\(Legacy.hoursTopic)")
            #expect(elsewhere.status != .unauthorized && elsewhere.status != .tooManyRequests)
            #expect(elsewhere.status == .notFound)  // authenticated: the topic is what is missing
            // Failures stay counted in the database for every replica: one document each, with its address.
            let failures = hub.database.collection(CollectionName.loginFailures)
            #expect(try await failures.countDocuments(["username": "ann", "address": "198.51.100.7"]) == 5)
            // Once ann fails from the second address too, the username's failures count there as well.
            #expect(try await Self.basic(hub, "ann", "wrong-again", from: "203.0.113.20").status == .unauthorized)
            #expect(
                try await Self.basic(hub, "ann", HubHarness.annPassword, from: "203.0.113.20").status
                    == .tooManyRequests)
        }
    }

    @Test func oneAddressGuessingManyUsernamesIsStoppedAtTwentyFailures() async throws {
        try await Self.withLoginHub { hub, accounts in
            let checks = accounts.credentials.gate.started
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<25 {
                statuses.append(
                    try await Self.basic(hub, "user-\(index)", "guess-\(index)", from: "2001:db8:7:7::1").status)
            }
            #expect(
                statuses == Array(repeating: .unauthorized, count: 20) + Array(repeating: .tooManyRequests, count: 5))
            #expect(accounts.credentials.gate.started - checks == 20)  // unknown usernames cost a (dummy) check too
            // The whole /64 is one address; ann with no failures of her own is refused there, and welcome elsewhere.
            #expect(
                try await Self.basic(hub, "ann", HubHarness.annPassword, from: "2001:db8:7:7:ffff::2").status
                    == .tooManyRequests)
            #expect(try await Self.basic(hub, "ann", HubHarness.annPassword, from: "2001:db8:7:8::1").status == .ok)
        }
    }

    @Test func theUsernameLockedByBasicFailuresFromOneAddressLogsInToThePortalFromAnother() async throws {
        try await Self.withLoginHub { hub, _ in
            for _ in 1...5 { _ = try await Self.basic(hub, "ann", "wrong-password", from: "198.51.100.9") }
            func portalLogin(from client: String) async throws -> TestResponse {
                let page = try await hub.client.execute(
                    uri: "/portal/login", method: .get, headers: [.xForwardedFor: client])
                let cookie = try #require(
                    page.headers[values: .setCookie].first { $0.hasPrefix(CSRFMiddleware.loginCookie) })
                let form = "username=ann&password=\(HubHarness.annPassword)&_csrf=\(try PortalBrowser.csrf(in: page))"
                return try await hub.client.execute(
                    uri: "/portal/login", method: .post,
                    headers: [
                        .xForwardedFor: client, .contentType: "application/x-www-form-urlencoded",
                        .cookie: String(cookie.split(separator: ";")[0]),
                    ],
                    body: ByteBuffer(string: form))
            }
            // One policy: the form at the failing address is throttled like Basic, and open at another.
            let throttled = try await portalLogin(from: "198.51.100.9")
            #expect(throttled.status == .tooManyRequests && throttled.text.contains("Too many failed logins"))
            #expect(try await portalLogin(from: "203.0.113.21").status == .seeOther)
        }
    }

    @Test func aFullPasswordCheckGateAnswers503AtOnce() async throws {
        try await Self.withLoginHub { hub, accounts in
            let gate = accounts.credentials.gate
            // Every place taken and the line full, by checks that wait for the test to let them go.
            let (release, releaser) = AsyncStream<Void>.makeStream()
            let holders = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<(gate.concurrency + gate.queue) {
                        group.addTask { try await gate.run { for await _ in release {} } }
                    }
                    try await group.waitForAll()
                }
            }
            while gate.started < gate.concurrency || gate.queued < gate.queue { await Task.yield() }
            let checks = gate.started
            let busy = try await Self.basic(hub, "ann", HubHarness.annPassword, from: "203.0.113.22")
            #expect(busy.status == .serviceUnavailable)
            #expect(busy.errorCode == "busy")
            #expect(busy.headers[.retryAfter] == "1")
            #expect(gate.started == checks)  // answered without waiting for a place
            releaser.finish()
            try await holders.value
            // A refusal for load is no failed login: ann is not one step nearer the limit.
            #expect(try await hub.database.collection(CollectionName.loginFailures).countDocuments() == 0)
            #expect(try await Self.basic(hub, "ann", HubHarness.annPassword, from: "203.0.113.22").status == .ok)
        }
    }

    @Test func xForwardedForFromAnUntrustedPeerIsIgnored() async throws {
        // The real application, which trusts no proxy: every request below comes from its peer, 127.0.0.1.
        try await HubHarness.with { (hub) async throws in
            for index in 1...5 {
                var headers = HubHarness.Caller.basic("ann", "wrong-password").headers
                headers[.xForwardedFor] = "198.51.100.\(index)"
                #expect(
                    try await hub.client.execute(uri: "/healthz", method: .get, headers: headers).status
                        == .unauthorized)
            }
            var headers = HubHarness.Caller.basic("ann", HubHarness.annPassword).headers
            headers[.xForwardedFor] = "203.0.113.30"
            #expect(
                try await hub.client.execute(uri: "/healthz", method: .get, headers: headers).status == .tooManyRequests
            )
            let failures = hub.database.collection(CollectionName.loginFailures)
            #expect(try await failures.countDocuments(["address": "127.0.0.1"]) == 5)
        }
    }

    @Test func aSessionLastsTwelveHoursAtMostUnlessConfigured() throws {
        #expect(try HubConfiguration.fromEnvironment([:]).portal.sessionMaxLifetime == .seconds(12 * 3600))
        let four = try HubConfiguration.fromEnvironment(["PORTAL_SESSION_MAX_HOURS": "4"]).portal
        #expect(four.sessionLifetimes.maximum == .seconds(4 * 3600) && four.sessionLifetimes.idle == .seconds(8 * 3600))
        let error = #expect(throws: ConfigurationError.self) {
            try HubConfiguration.fromEnvironment(["PORTAL_SESSION_MAX_HOURS": "0"])
        }
        #expect(error?.description.contains("PORTAL_SESSION_MAX_HOURS") == true)
    }

    @Test func identitiesFollowTheAccessRule() {
        let ann = Identity(name: "ann", role: .communicator, kind: .user)
        #expect(ann.maySend(through: [[], [], []]))
        #expect(ann.maySend(through: [["ann", "bob"], [], ["ann"]]))
        #expect(!ann.maySend(through: [[], ["bob"], []]))
        #expect(Identity(name: "root", role: .admin, kind: .token).maySend(through: [["bob"], ["bob"], ["bob"]]))
    }
}
