import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The portal over HTTP: sessions, CSRF, the login throttle, headers, roles, and sending through the form.
@Suite struct PortalTests {
    static let adminPassword = "admin-password-1"

    /// The legacy channel and an admin user, "root".
    static let seed: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await HubHarness.legacy(database)
        let users = UserDAO(database: database)
        let hash = try await Credentials(users: users, tokens: TokenDAO(database: database), bcryptCost: 4)
            .hash(password: adminPassword)
        _ = try await users.add(username: "root", passwordHash: hash, role: .admin)
    }

    @Test func loginGivesAFreshHttpOnlyLaxCookieAndLogoutEndsTheSessionOnTheServer() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            let first = try await browser.login("ann", HubHarness.annPassword)
            #expect(first.status == .seeOther)
            #expect(first.headers[.location] == "/portal")
            let cookie = try #require(first.headers[values: .setCookie].first { $0.hasPrefix("msi_session=") })
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && !cookie.contains("Secure"))
            let secret = try #require(browser.cookies["msi_session"])
            #expect(secret.count == 43)
            // Stored under a hash of the secret, never the secret itself.
            let sessions = try await hub.database.collection(CollectionName.sessions).find()
            #expect(sessions.count == 1 && sessions[0]["_id"]?.stringValue != secret)
            #expect(try await browser.get("/portal").text.contains("Hello, ann"))

            // Logging in again from a browser that still has a session: a new id, and the old session ends.
            #expect(try await browser.get("/portal/login").headers[.location] == "/portal")
            var other = PortalBrowser(hub: hub)
            let loginPage = try await other.get("/portal/login")
            browser.cookies[CSRFMiddleware.loginCookie] = other.cookies[CSRFMiddleware.loginCookie]
            _ = try await browser.post(
                "/portal/login",
                [
                    "username": "ann", "password": HubHarness.annPassword,
                    "_csrf": try PortalBrowser.csrf(in: loginPage),
                ])
            let second = try #require(browser.cookies["msi_session"])
            #expect(second != secret)
            #expect(try await hub.database.collection(CollectionName.sessions).countDocuments() == 1)

            let menu = try await browser.get("/portal")
            let logout = try await browser.post("/portal/logout", ["_csrf": try PortalBrowser.csrf(in: menu)])
            #expect(logout.status == .seeOther)
            #expect(try await hub.database.collection(CollectionName.sessions).countDocuments() == 0)
            // The old cookie, replayed, opens nothing.
            browser.cookies["msi_session"] = second
            let after = try await browser.get("/portal/send")
            #expect(after.status == .seeOther)
            #expect(after.headers[.location]?.hasPrefix("/portal/login") == true)
        }
    }

    @Test func formsWithoutTheirCSRFTokenAreRefused() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let form = [
                "channel": Fixtures.Legacy.channelID.hex, "area": Fixtures.Legacy.sportsID.hex,
                "subject": Fixtures.Legacy.fixturesID.hex, "title": "t", "message": "m",
            ]
            #expect(try await browser.post("/portal/send", form).status == .forbidden)
            var wrong = form
            wrong["_csrf"] = PortalSecret.make()
            #expect(try await browser.post("/portal/send", wrong).status == .forbidden)
            #expect(try await browser.post("/portal/logout", [:]).status == .forbidden)
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
            // The login form's token must match its cookie.
            var stranger = PortalBrowser(hub: hub)
            let login = try await stranger.post(
                "/portal/login",
                [
                    "username": "ann", "password": HubHarness.annPassword,
                    "_csrf": PortalSecret.make(),
                ])
            #expect(login.status == .forbidden)
        }
    }

    @Test func theSixthLoginWithinAMinuteIsThrottledEvenWithTheRightPassword() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            for _ in 1...5 {
                #expect(try await browser.login("ann", "wrong-password").status == .unauthorized)
            }
            let throttled = try await browser.login("ann", HubHarness.annPassword)
            #expect(throttled.status == .tooManyRequests)
            #expect(throttled.headers[.retryAfter] == "60")
            #expect(throttled.text.contains("Too many failed logins"))
            #expect(browser.cookies["msi_session"] == nil)
            // Kept in the database, so every replica counts the same failures; other users are not affected.
            #expect(
                try await hub.database.collection(CollectionName.loginFailures).countDocuments(["username": "ann"]) == 5
            )
            #expect(try await browser.login("root", Self.adminPassword).status == .seeOther)
        }
    }

    @Test func pagesCarryTheSecurityHeadersAndForbidInlineScript() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            let response = try await hub.request(.get, "/portal/login")
            #expect(response.status == .ok)
            let policy = try #require(response.headers[.contentSecurityPolicy])
            #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"))
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(response.headers[.xContentTypeOptions] == "nosniff")
            #expect(response.headers[.xFrameOptions] == "DENY")
            #expect(response.headers[.referrerPolicy] == "same-origin")
            #expect(!response.text.contains("<script>"))
            let script = try await hub.request(.get, "/portal/static/portal.js")
            #expect(script.status == .ok && script.headers[.contentType]?.hasPrefix("text/javascript") == true)
            #expect(try await hub.request(.get, "/").headers[.location] == "/portal")
        }
    }

    @Test func aCommunicatorCannotOpenAdminPagesAndAnonymousUsersAreSentToLogIn() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            let anonymous = try await browser.get("/portal/admin/channels")
            #expect(anonymous.status == .seeOther)
            #expect(anonymous.headers[.location] == "/portal/login?next=%2Fportal%2Fadmin%2Fchannels")
            _ = try await browser.login("ann", HubHarness.annPassword)
            for page in [
                "/portal/admin/channels", "/portal/admin/users", "/portal/admin/tokens",
                "/portal/admin/channels/\(Fixtures.Legacy.channelID.hex)/areas",
            ] {
                let refused = try await browser.get(page)
                #expect(refused.status == .forbidden && refused.text.contains("Admins only"))
                #expect(refused.text.contains("id=\"logout\""))  // the error page still shows who is logged in
            }
        }
    }

    @Test func theSendFormStoresAndRelaysLikePostMessageAndKeepsTheFormOnErrors() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let page = try await browser.get("/portal/send")
            #expect(page.text.contains("Opening hours") && page.text.contains("data-distribution=\"Alert\""))
            let csrf = try PortalBrowser.csrf(in: page)
            var form = [
                "_csrf": csrf, "channel": Fixtures.Legacy.channelID.hex, "area": Fixtures.Legacy.libraryID.hex,
                "subject": Fixtures.Legacy.hoursID.hex, "title": "Closed <today>", "message": "Back tomorrow",
            ]
            // An Alert needs its notification text: the form comes back as filled, the error beside the field.
            let refused = try await browser.post("/portal/send", form)
            #expect(refused.status == .unprocessableContent)
            #expect(refused.text.contains("id=\"desc-error\""))
            #expect(refused.text.contains("value=\"Closed &lt;today&gt;\""))
            form["desc"] = "The library is closed"
            // The relay sends what its process stores itself once its progress record is known to be written.
            try await hub.waitForRelayRecord()
            let sent = try await browser.post("/portal/send", form)
            #expect(sent.status == .seeOther)
            let location = try #require(sent.headers[.location])
            let stored = try #require(try await hub.database.collection(CollectionName.message).findOne([:]))
            let msiKey = try #require(stored["msi_key"]?.objectIDValue)
            #expect(location == "/portal/messages/\(msiKey.hex)")
            #expect(stored["sender"]?.stringValue == "ann")
            #expect(stored["topic_key"]?.stringValue == Fixtures.Legacy.hoursTopic)
            #expect(stored["distribution"]?.stringValue == "Alert")
            // Handed to this process's relay, which sends it itself (in log mode here), or, when a loaded machine let
            // its progress record age, left to the outbox: stored for the relay either way, and sent.
            #expect(["direct", "pending"].contains(stored[path: "relay.state"]?.stringValue))
            try await eventually("the message is sent") { try await hub.relayState(msiKey) == "sent" }
            let confirmation = try await browser.get(location)
            #expect(confirmation.text.contains(msiKey.hex))
            let list = try await browser.get("/portal/sent?channel=\(Fixtures.Legacy.channelID.hex)")
            #expect(list.text.contains("Closed &lt;today&gt;"))
        }
    }

    @Test func namesAreEscapedAsText() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            try await hub.request(
                .post, "/channel", as: .admin,
                json: #"{"name": "<script>alert(1)</script>", "desc": "\"quoted\""}"#)
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("root", Self.adminPassword)
            let page = try await browser.get("/portal/admin/channels")
            #expect(page.status == .ok)
            #expect(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(!page.text.contains("<script>alert"))
        }
    }
}

extension PortalTests {
    @Test func adminFormsWriteTheCubeThroughTheDAOsAndGETChannelSeesItAtOnce() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("root", Self.adminPassword)
            let csrf = try PortalBrowser.csrf(in: try await browser.get("/portal/admin/channels/new"))
            let added = try await browser.post(
                "/portal/admin/channels/new",
                ["_csrf": csrf, "name": "North Campus", "desc": "", "access": "ann, bob"])
            #expect(added.status == .seeOther && added.headers[.location] == "/portal/admin/channels?done=added")
            let channel = try #require(
                try await hub.database.collection(CollectionName.icube).findOne(["name": "North Campus"]))
            let channelID = try #require(channel["_id"]?.objectIDValue).hex
            #expect(channel["access"] == ["ann", "bob"])
            #expect(try await hub.request(.get, "/channel").text.contains("North Campus"))

            @Sendable func stored() async throws -> Channel {
                let document = try await hub.channel(try #require(ObjectID(hex: channelID)))
                return try #require(document.flatMap(Channel.init(document:)))
            }
            let areas = "/portal/admin/channels/\(channelID)/areas"
            #expect(try await browser.post(areas + "/new", ["_csrf": csrf, "name": "Labs"]).status == .seeOther)
            let areaID = try #require(try await stored().areas.first?.id.hex)
            let subjects = "\(areas)/\(areaID)/subjects"
            // A subject without a distribution: the form comes back as filled, the error beside the field.
            let refused = try await browser.post(
                subjects + "/new", ["_csrf": csrf, "name": "Lab <safety>", "level": "Forced"])
            #expect(refused.status == .unprocessableContent)
            #expect(
                refused.text.contains("id=\"distribution-error\"")
                    && refused.text.contains("value=\"Lab &lt;safety&gt;\""))
            #expect(
                try await browser.post(
                    subjects + "/new",
                    [
                        "_csrf": csrf, "name": "Lab safety", "level": "Forced",
                        "distribution": "Alert",
                    ]
                ).status == .seeOther)
            let subject = try #require(try await stored().areas.first?.subjects.first)
            #expect(subject.level == "Forced" && subject.distribution == .alert)
            #expect(subject.topicKey == "\(channelID)-\(areaID)-\(subject.id.hex)")
            #expect(try await hub.request(.get, "/channel").text.contains("Lab safety"))

            let edited = try await browser.post(
                "\(subjects)/\(subject.id.hex)/edit",
                [
                    "_csrf": csrf, "name": "Lab rules", "desc": "d", "level": "",
                    "distribution": "Information",
                ])
            #expect(edited.headers[.location] == subjects + "?done=saved")
            let editedSubject = try await stored().areas.first?.subjects.first
            #expect(editedSubject?.name == "Lab rules" && editedSubject?.distribution == .information)

            let confirm = try await browser.get("\(subjects)/\(subject.id.hex)/delete")
            #expect(confirm.status == .ok && confirm.text.contains("Delete the subject “Lab rules”?"))
            #expect(try await browser.post("\(subjects)/\(subject.id.hex)/delete", ["_csrf": csrf]).status == .seeOther)
            #expect(try await stored().areas.first?.subjects.isEmpty == true)
            #expect(!(try await hub.request(.get, "/channel").text.contains("Lab rules")))
        }
    }

    @Test func disablingAUserEndsTheirSessionsAndTheirLogins() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            #expect(try await ann.get("/portal").status == .ok)
            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", Self.adminPassword)
            let csrf = try PortalBrowser.csrf(in: try await root.get("/portal/admin/users"))
            let annID = try #require(
                try await hub.database.collection(CollectionName.users).findOne(["username": "ann"])?["_id"]?
                    .objectIDValue)
            let disabled = try await root.post("/portal/admin/users/\(annID.hex)/disable", ["_csrf": csrf])
            #expect(disabled.headers[.location] == "/portal/admin/users?done=disabled")
            #expect(try await ann.get("/portal").status == .seeOther)
            #expect(try await ann.login("ann", HubHarness.annPassword).status == .unauthorized)
            // An admin cannot lock themselves out.
            let rootID = try #require(
                try await hub.database.collection(CollectionName.users).findOne(["username": "root"])?["_id"]?
                    .objectIDValue)
            #expect(
                try await root.post("/portal/admin/users/\(rootID.hex)/disable", ["_csrf": csrf]).status
                    == .unprocessableContent)
        }
    }

    @Test func aSessionWorksOnAnotherReplicaOfTheSameDatabase() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let secret = try #require(browser.cookies["msi_session"])
            let replica = try await HubProcess(mongoURI: try HubProcess.uri(of: hub.database))
            defer { replica.stop() }
            let page = try await replica.get("/portal", headers: ["Cookie": "msi_session=\(secret)"])
            #expect(page.status == 200)
            #expect(String(decoding: page.body, as: UTF8.self).contains("Hello, ann"))
        }
    }

    @Test func secureCookiesWhenConfiguredForHTTPS() throws {
        let portal = try PortalConfiguration.fromEnvironment(["PORTAL_SECURE_COOKIES": "true"])
        let cookie = portal.sessionCookie(PortalSecret.make()).description
        #expect(cookie.hasPrefix("__Host-msi_session=") && cookie.contains("Secure") && cookie.contains("HttpOnly"))
        #expect(cookie.contains("SameSite=Lax") && cookie.contains("Path=/"))
        #expect(throws: ConfigurationError.self) {
            try PortalConfiguration.fromEnvironment(["PORTAL_SECURE_COOKIES": "maybe"])
        }
        #expect(try HubConfiguration.fromEnvironment([:]).portal.secureCookies == false)
    }

    @Test func theSendFormShowsTheSendRulesOfMessageServiceBesideTheirFields() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let page = try await browser.get("/portal/send")
            #expect(page.text.contains("maxlength=\"500\"") && page.text.contains("maxlength=\"1500\""))
            let form = [
                "_csrf": try PortalBrowser.csrf(in: page), "channel": Fixtures.Legacy.channelID.hex,
                "area": Fixtures.Legacy.libraryID.hex, "subject": Fixtures.Legacy.hoursID.hex,
                "title": String(repeating: "t", count: 501), "desc": "Closed", "message": "",
            ]
            let refused = try await browser.post("/portal/send", form)
            #expect(refused.status == .unprocessableContent)
            #expect(
                refused.text.contains("id=\"title-error\">This is 501 characters long; at most 500 fit on the phones."))
            #expect(refused.text.contains("id=\"message-error\">Enter the message."))
            #expect(!refused.text.contains("id=\"desc-error\""))
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }
}

/// A browser's part of the conversation: cookies kept between requests, forms sent urlencoded.
struct PortalBrowser {
    let hub: HubHarness
    var cookies: [String: String] = [:]

    mutating func get(_ uri: String) async throws -> TestResponse {
        try await send(.get, uri, body: nil)
    }

    mutating func post(_ uri: String, _ form: [String: String]) async throws -> TestResponse {
        let body = form.map { "\(Self.encode($0.key))=\(Self.encode($0.value))" }.joined(separator: "&")
        return try await send(.post, uri, body: body)
    }

    /// Posts fields in order, a name as often as it is given (the rows a form repeats a field in).
    mutating func post(_ uri: String, pairs: [(String, String)]) async throws -> TestResponse {
        let body = pairs.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try await send(.post, uri, body: body)
    }

    /// Opens the login page and logs in with its token.
    mutating func login(_ username: String, _ password: String) async throws -> TestResponse {
        let page = try await get("/portal/login")
        return try await post(
            "/portal/login", ["username": username, "password": password, "_csrf": try Self.csrf(in: page)])
    }

    /// The CSRF token in a page's forms.
    static func csrf(in page: TestResponse) throws -> String {
        let text = page.text
        let marker = #"name="_csrf" value=""#
        let start = try #require(text.range(of: marker)).upperBound
        let end = try #require(text[start...].firstIndex(of: "\""))
        return String(text[start..<end])
    }

    private mutating func send(_ method: HTTPRequest.Method, _ uri: String, body: String?) async throws -> TestResponse
    {
        var headers: HTTPFields = [:]
        if !cookies.isEmpty {
            headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        if body != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        let response = try await hub.client.execute(
            uri: uri, method: method, headers: headers,
            body: body.map { ByteBuffer(string: $0) })
        for header in response.headers[values: .setCookie] {
            let pair = header.split(separator: ";")[0].split(
                separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { continue }
            if header.contains("Max-Age=0") {
                cookies[String(pair[0])] = nil
            } else {
                cookies[String(pair[0])] = String(pair[1])
            }
        }
        return response
    }

    private static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}
