import Curl
import DAO
import FakeOIDC
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import OIDC
import Testing

/// Staff sign in to the portal through the school's OpenID provider (issue 46), against the test provider on
/// loopback: the whole code flow with PKCE; role and access lists from the provider's groups, changed at the next
/// sign-in and audited; a user in none of the groups refused and disabled; every failed check (state, a replayed
/// code, nonce, expiry, signature, audience, azp, an algorithm the keys do not pin, the provider's error, a plain
/// http token endpoint off loopback) ending on the login page without a session; `OIDC_ONLY`; sign-out at the
/// provider; the session no longer than the id_token.
@Suite struct StaffSignInTests {
    static let teacher = FakeOIDCUser(subject: "t-1", email: "teacher@school.test", groups: ["staff", "sports"])

    /// The portal configured for `provider`: staff are communicators, it-admins admins, `sports` may send to the
    /// legacy channel's Sports area and `library` to its Library area.
    static func portal(_ provider: FakeOIDC, only: Bool = false, autoRedirect: Bool = false) -> PortalConfiguration {
        var portal = PortalConfiguration()
        portal.staffSignIn = StaffSignInConfiguration(
            settings: OIDCSettings(
                issuer: provider.issuer, clientID: provider.clientID, clientSecret: "test-client-secret",
                displayName: "Test IdP"),
            rules: StaffDirectoryRules(
                adminGroups: ["it-admins"], communicatorGroups: ["staff"],
                accessMap: [
                    "sports": [CubeNode(channelID: Fixtures.Legacy.channelID, areaID: Fixtures.Legacy.sportsID)],
                    "library": [CubeNode(channelID: Fixtures.Legacy.channelID, areaID: Fixtures.Legacy.libraryID)],
                ]),
            only: only, autoRedirect: autoRedirect)
        return portal
    }

    /// Runs `body` with a provider and a hub whose portal signs in through it.
    static func with(
        only: Bool = false, autoRedirect: Bool = false, tokenEndpoint: String? = nil,
        approval: ApprovalPolicy = ApprovalPolicy(),
        _ test: String = #function, _ body: @Sendable (HubHarness, FakeOIDC) async throws -> Void
    ) async throws {
        let provider = try await FakeOIDC.start()
        provider.signIn(as: teacher)
        provider.setTokenEndpoint(tokenEndpoint)
        do {
            try await HubHarness.with(
                test, seed: PortalTests.seed, approval: approval,
                portal: portal(provider, only: only, autoRedirect: autoRedirect)
            ) { hub in
                try await body(hub, provider)
            }
        } catch {
            await provider.stop()
            throw error
        }
        await provider.stop()
    }

    @Test func aTeacherSignsInWithRoleAndAccessFromTheirGroupsChangedAtTheNextSignIn() async throws {
        try await Self.with { hub, provider in
            var browser = PortalBrowser(hub: hub)
            let login = try await browser.get("/portal/login")
            #expect(login.text.contains("Sign in with Test IdP") && login.text.contains(#"name="password""#))
            let done = try await browser.signInThroughProvider()
            #expect(done.status == .seeOther && done.headers[.location] == "/portal")
            #expect(
                browser.cookies["msi_session"] != nil && browser.cookies[ProviderSignInController.attemptCookie] == nil)
            #expect(try await browser.get("/portal").text.contains("Hello, teacher@school.test"))
            #expect(provider.codesRedeemed == 1 && provider.discoveryFetches == 1 && provider.jwksFetches == 1)

            let user = try await UserDAO(database: hub.database).get(username: "teacher@school.test")
            #expect(user.role == .communicator && user.passwordHash.isEmpty && user.signsInWithProvider)
            #expect(try await Self.access(hub, area: Fixtures.Legacy.sportsID).contains("teacher@school.test"))
            // The session ends with the id_token at the latest.
            let stored = try await hub.database.collection(CollectionName.sessions).findOne([:])
            let session = try #require(stored)
            let endsAt = try #require(session["ends_at"]?.int64Value)
            #expect(abs(endsAt - (UnixTime.nowMilliseconds() + 3_600_000)) < 120_000)
            #expect(session["id_token"]?.stringValue?.split(separator: ".").count == 3)

            // Moved from sports to library and made an IT admin: the next sign-in changes both, and says so.
            provider.signIn(
                as: FakeOIDCUser(subject: "t-1", email: "teacher@school.test", groups: ["it-admins", "library"]))
            var again = PortalBrowser(hub: hub)
            #expect(try await again.signInThroughProvider().status == .seeOther)
            #expect(try await UserDAO(database: hub.database).get(username: "teacher@school.test").role == .admin)
            #expect(try await !Self.access(hub, area: Fixtures.Legacy.sportsID).contains("teacher@school.test"))
            #expect(try await Self.access(hub, area: Fixtures.Legacy.libraryID).contains("teacher@school.test"))
            let users = try await again.get("/portal/admin/users")
            #expect(users.status == .ok && users.text.contains(#"<span class="badge">identity provider</span>"#))
            // The role change ended the session that had the old role.
            #expect(try await browser.get("/portal").status == .seeOther)
            let actions = try await Self.auditActions(hub, target: "teacher@school.test")
            #expect(actions == ["user.create", "user.access", "user.role", "user.access"])

            // Removed from every group: refused with a 403 page, and the user is disabled (no API, no sessions).
            provider.signIn(as: FakeOIDCUser(subject: "t-1", email: "teacher@school.test", groups: ["students"]))
            var third = PortalBrowser(hub: hub)
            let refused = try await third.signInThroughProvider()
            #expect(refused.status == .forbidden && refused.text.contains("none of the groups"))
            #expect(third.cookies["msi_session"] == nil)
            #expect(try await again.get("/portal").status == .seeOther, "the admin session ended")
            #expect(try await UserDAO(database: hub.database).get(username: "teacher@school.test").disabled)
            // Back in a group: enabled again by the provider (an admin's disable would stay).
            provider.signIn(as: Self.teacher)
            var fourth = PortalBrowser(hub: hub)
            #expect(try await fourth.signInThroughProvider().status == .seeOther)
            let back = try await UserDAO(database: hub.database).get(username: "teacher@school.test")
            #expect(!back.disabled && back.role == .communicator)
            #expect(
                try await Self.auditActions(hub, target: "teacher@school.test").suffix(4) == [
                    "user.disable", "user.enable", "user.role", "user.access",
                ])
        }
    }

    @Test func everyFailedCheckEndsOnTheLoginPageWithoutASession() async throws {
        try await Self.with { hub, provider in
            for tamper in FakeOIDCTamper.allCases {
                provider.tamperNext(tamper)
                var browser = PortalBrowser(hub: hub)
                let page = try await browser.signInThroughProvider()
                #expect(page.status == .badRequest, "\(tamper)")
                let reason = tamper == .unverifiedEmail ? "is not verified" : "could not be verified"
                #expect(page.text.contains(#"id="login-error""#) && page.text.contains(reason), "\(tamper)")
                #expect(browser.cookies["msi_session"] == nil, "\(tamper)")
            }
            // A wrong state: the callback of another sign-in.
            var browser = PortalBrowser(hub: hub)
            let callback = try await browser.providerCallback()
            let forged = callback.replacingOccurrences(of: "state=", with: "state=x")
            #expect(try await browser.get(forged).status == .badRequest)
            // The same callback again: the sign-in was taken by the first, and nothing signs in.
            #expect(try await browser.get(callback).status == .badRequest)
            // A replayed code: a new sign-in's state with a code the provider already redeemed.
            var honest = PortalBrowser(hub: hub)
            let first = try await honest.providerCallback()
            #expect(try await honest.get(first).status == .seeOther)
            var replay = PortalBrowser(hub: hub)
            let second = try await replay.providerCallback()
            let replayed = Self.replacing("code", in: second, with: try #require(Self.query("code", in: first)))
            let refused = try await replay.get(replayed)
            #expect(refused.status == .badRequest && refused.text.contains("did not confirm the sign-in"))
            #expect(replay.cookies["msi_session"] == nil && provider.codesRefused == 1)
            // The provider's own refusal.
            provider.denyNext()
            var denied = PortalBrowser(hub: hub)
            let deniedPage = try await denied.signInThroughProvider()
            #expect(deniedPage.status == .badRequest && deniedPage.text.contains("access_denied"))
            // Only the honest browser has a session.
            #expect(try await hub.database.collection(CollectionName.sessions).countDocuments() == 1)
        }
    }

    @Test func aPlainHTTPTokenEndpointOffLoopbackIsRefusedBeforeAnySecretIsSent() async throws {
        try await Self.with(tokenEndpoint: "http://192.0.2.10/token") { hub, provider in
            var browser = PortalBrowser(hub: hub)
            let page = try await browser.get("/portal/login/oidc")
            #expect(page.status == .badRequest && page.text.contains("plain http:// to another machine"))
            #expect(provider.codesRedeemed == 0 && browser.cookies["msi_session"] == nil)
        }
    }

    @Test func oidcOnlyRefusesPasswordsAndBasicButNotTokens() async throws {
        try await Self.with(only: true) { hub, _ in
            var browser = PortalBrowser(hub: hub)
            let login = try await browser.get("/portal/login")
            #expect(login.text.contains("Sign in with Test IdP") && !login.text.contains(#"name="password""#))
            let refused = try await browser.post(
                "/portal/login",
                [
                    "username": "ann", "password": HubHarness.annPassword,
                    "_csrf": try #require(browser.cookies[CSRFMiddleware.loginCookie]),
                ])
            #expect(refused.status == .forbidden && browser.cookies["msi_session"] == nil)
            #expect(
                try await hub.request(.get, "/user", as: .basic("ann", HubHarness.annPassword)).status == .unauthorized)
            #expect(try await hub.request(.get, "/channel", as: .admin).status == .ok)
            #expect(try await browser.signInThroughProvider().status == .seeOther)
        }
    }

    @Test func aLocalUserOfTheSameNameIsTheSameUserAndSignOutEndsTheProvidersSessionToo() async throws {
        try await Self.with { hub, provider in
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            try await services.accounts.addUser(
                "teacher@school.test", role: .communicator, password: "local-password-1")
            var browser = PortalBrowser(hub: hub)
            #expect(try await browser.signInThroughProvider().status == .seeOther)
            let users = try await UserDAO(database: hub.database).list().filter { $0.username == "teacher@school.test" }
            #expect(users.count == 1 && users[0].signsInWithProvider && !users[0].passwordHash.isEmpty)
            // The same person both ways: the password still works, and names the same identity.
            var local = PortalBrowser(hub: hub)
            #expect(try await local.login("teacher@school.test", "local-password-1").status == .seeOther)

            let page = try await browser.get("/portal")
            let out = try await browser.post("/portal/logout", ["_csrf": try PortalBrowser.csrf(in: page)])
            // A page that moves on to the provider's end-session endpoint by itself (a redirect of a form's answer
            // to another site would break the portal's form-action policy).
            #expect(
                out.status == .ok
                    && out.text.contains(#"<meta http-equiv="refresh" content="0;url=\#(provider.issuer)/logout?"#))
            #expect(out.text.contains("id_token_hint=") && out.text.contains("post_logout_redirect_uri="))
            #expect(browser.cookies["msi_session"] == nil)
            #expect(try await browser.get("/portal").status == .seeOther, "the hub's session has ended")
            // The password session says logged out at the hub only.
            let localPage = try await local.get("/portal")
            let localOut = try await local.post("/portal/logout", ["_csrf": try PortalBrowser.csrf(in: localPage)])
            #expect(localOut.headers[.location] == "/portal/login?logged_out=1")
        }
    }

    @Test func aMessageHeldForApprovalCannotBeApprovedByItsAuthorsOtherWayIn() async throws {
        try await Self.with(approval: ApprovalPolicy(defaults: true)) { hub, _ in
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            try await services.accounts.addUser(
                "teacher@school.test", role: .communicator, password: "local-password-1")
            let held = try await hub.request(
                .post, "/message", as: .basic("teacher@school.test", "local-password-1"),
                json: ApprovalTests.alert("School closed"))
            #expect(held.status == .accepted)
            let key = try #require(try held.json()["msi_key"]?.stringValue)
            // Signed in through the provider as the same name: the same person, who may not approve their own.
            var browser = PortalBrowser(hub: hub)
            #expect(try await browser.signInThroughProvider().status == .seeOther)
            let list = try await browser.get("/portal/approvals")
            #expect(list.status == .ok && !list.text.contains(key))
            let refused = try await browser.post(
                "/portal/approvals/\(key)/approve", ["_csrf": try PortalBrowser.csrf(in: list), "version": "1"])
            #expect(refused.status == .forbidden, "approval_self: \(refused.status)")
            let stored = try await hub.database.collection(CollectionName.message).findOne([
                "msi_key": .objectID(try #require(ObjectID(hex: key)))
            ])
            #expect(stored?["relay"]?.documentValue?["state"]?.stringValue == "awaiting_approval")
            // Another person (ann) approves it.
            #expect(
                try await hub.request(
                    .post, "/message/\(key)/approve", as: .basic("ann", HubHarness.annPassword),
                    json: #"{"version": 1}"#
                ).status == .ok)
        }
    }

    @Test func autoRedirectSendsTheLoginPageToTheProviderButNotAfterASignOut() async throws {
        try await Self.with(autoRedirect: true) { hub, _ in
            var browser = PortalBrowser(hub: hub)
            let login = try await browser.get("/portal/login?next=/portal/sent")
            #expect(login.status == .found)
            #expect(login.headers[.location] == "/portal/login/oidc?next=%2Fportal%2Fsent")
            let callback = try await browser.providerCallback(from: try #require(login.headers[.location]))
            #expect(
                try await browser.get(callback).headers[.location] == "/portal/sent", "back where the user was going")
            var fresh = PortalBrowser(hub: hub)
            let page = try await fresh.get("/portal/login?logged_out=1")
            #expect(page.status == .ok && page.text.contains("You have logged out."))
        }
    }

    @Test func oneAddressBeginsAtMostSixtySignInsAMinuteThenGets429WithRetryAfter() async throws {
        try await Self.with { hub, _ in
            // However the minute windows fall, 121 begins within a minute cross at most two windows of 60.
            var begun = 0
            var refused: TestResponse?
            for _ in 0...(2 * StaffSignIn.beginsPerMinute) {
                var browser = PortalBrowser(hub: hub)
                let answer = try await browser.get("/portal/login/oidc")
                if answer.status == .tooManyRequests {
                    refused = answer
                    break
                }
                #expect(answer.status == .found)
                begun += 1
            }
            let answer = try #require(refused, "the address was never refused")
            #expect(begun >= StaffSignIn.beginsPerMinute && begun <= 2 * StaffSignIn.beginsPerMinute)
            let seconds = Int(answer.headers[.retryAfter] ?? "") ?? 0
            #expect(seconds >= 1 && seconds <= 60 && answer.text.contains("Too many sign-ins"))
            #expect(answer.headers[.setCookie]?.contains(ProviderSignInController.attemptCookie) != true, "no attempt")
        }
    }

    @Test func theSessionEndsWhenTheIDTokenDoes() async throws {
        try await Self.with { hub, provider in
            provider.setTokenLifetime(seconds: 3)
            var browser = PortalBrowser(hub: hub)
            #expect(try await browser.signInThroughProvider().status == .seeOther)
            // Stored to end with the id_token, however active (12 hours by PORTAL_SESSION_MAX_HOURS otherwise).
            let stored = try await hub.database.collection(CollectionName.sessions).findOne([:])
            let session = try #require(stored.flatMap(PortalSession.init(document:)))
            let endsAt = try #require(session.endsAt)
            #expect(endsAt - session.createdAt <= 3_000 && session.expiresAt <= endsAt)
            let wait = endsAt - UnixTime.nowMilliseconds() + 500
            if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
            #expect(try await browser.get("/portal").status == .seeOther, "the session outlived its id_token")
        }
    }

    @Test func theConfigurationRefusesWhatCannotWork() throws {
        let base = ["OIDC_ISSUER": "https://id.school.test", "OIDC_CLIENT_ID": "hub", "OIDC_ADMIN_GROUPS": "it"]
        #expect(try StaffSignInConfiguration.fromEnvironment([:]) == nil)
        let good = try #require(try StaffSignInConfiguration.fromEnvironment(base))
        #expect(good.settings.scopes == ["openid", "email", "profile"] && good.rules.usernameClaim == "email")
        for (name, value) in [
            ("OIDC_ISSUER", "http://id.school.test"), ("OIDC_CLIENT_ID", ""), ("OIDC_ADMIN_GROUPS", ""),
            ("OIDC_ONLY", "perhaps"), ("OIDC_ACCESS_MAP", "/no/such/file.json"),
            ("OIDC_REDIRECT_URL", "https://hub.school.test/elsewhere"),
        ] {
            var environment = base
            environment[name] = value
            #expect(throws: ConfigurationError.self, "\(name)=\(value)") {
                try StaffSignInConfiguration.fromEnvironment(environment)
            }
        }
        #expect(throws: ConfigurationError.self) { try StaffSignInConfiguration.fromEnvironment(["OIDC_ONLY": "true"]) }
        let map = FileManager.default.temporaryDirectory.appendingPathComponent("access-map-\(UUID()).json")
        try Data(#"{"sports": ["5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e05"], "bad": ["nope"]}"#.utf8).write(
            to: map)
        defer { try? FileManager.default.removeItem(at: map) }
        var environment = base
        environment["OIDC_ACCESS_MAP"] = map.path
        #expect(throws: ConfigurationError.self) { try StaffSignInConfiguration.fromEnvironment(environment) }
        try Data(#"{"sports": ["5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e05"]}"#.utf8).write(to: map)
        let mapped = try #require(try StaffSignInConfiguration.fromEnvironment(environment))
        #expect(
            mapped.rules.accessMap["sports"]
                == [CubeNode(channelID: Fixtures.Legacy.channelID, areaID: Fixtures.Legacy.sportsID)])
    }

    // MARK: Helpers

    static func access(_ hub: HubHarness, area: ObjectID) async throws -> [String] {
        let channel = try #require(try await hub.channel(Fixtures.Legacy.channelID))
        let areas = channel["areas"]?.arrayValue?.compactMap(\.documentValue) ?? []
        let found = try #require(areas.first { $0["id"]?.objectIDValue == area })
        return (found["access"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    static func auditActions(_ hub: HubHarness, target: String) async throws -> [String] {
        try await AuditReading.entries(hub.database, matching: AuditFilter(target: target))
            .map { $0["action"]?.stringValue ?? "" }
    }

    static func query(_ name: String, in uri: String) -> String? {
        URLComponents(string: uri)?.queryItems?.first { $0.name == name }?.value
    }

    static func replacing(_ name: String, in uri: String, with value: String) -> String {
        var parts = URLComponents(string: uri)!
        parts.queryItems = parts.queryItems?.map { $0.name == name ? URLQueryItem(name: name, value: value) : $0 }
        return parts.string!
    }
}

extension PortalBrowser {
    /// Begins a sign-in and follows the provider's authorization redirect; answers the hub's callback URI (path and
    /// query) the provider sent the browser back to.
    mutating func providerCallback(from start: String = "/portal/login/oidc") async throws -> String {
        let begun = try await get(start)
        try #require(begun.status == .found, "\(begun.status): \(begun.text)")
        let authorize = try #require(begun.headers[.location])
        let answer = try await withHTTPClient { try await $0.get(url: authorize) }
        try #require(answer.status == 302)
        let location = try #require(answer.header("location"))
        let callback = try #require(URLComponents(string: location))
        return callback.path + "?" + (callback.percentEncodedQuery ?? "")
    }

    /// Signs in through the provider: begin, the provider, the callback; answers the callback's response.
    mutating func signInThroughProvider() async throws -> TestResponse {
        try await get(try await providerCallback())
    }
}
