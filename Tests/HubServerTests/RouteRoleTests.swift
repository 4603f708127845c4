import DAO
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// Each role is stated once, by a route group (`RequireRole`): every route of the real router is checked here, so a
/// route added outside its group fails this suite.
@Suite("Every route of a role's group checks the role")
struct RouteRoleTests {
    /// A route of the real router, its path parameters filled with an id no element has.
    struct Route: CustomStringConvertible {
        var method: HTTPRequest.Method
        var path: String
        var description: String { "\(method.rawValue) \(path)" }
    }

    /// Every route `buildRouter` adds, HEAD apart (the router answers it as GET).
    static func routes() throws -> [Route] {
        let pool = try TestDatabase.sharedPool()
        let router = buildRouter(services: HubServices(pool: pool, database: pool.database("unused")))
        return router.routes.filter { $0.method != .head }.map { route in
            let path = route.path.components.map { $0.description.contains("{") ? ObjectIDs.missing : $0.description }
            return Route(method: route.method, path: "/" + path.joined(separator: "/"))
        }
    }

    /// The API's routes that need a caller: every write but the device's own (which take the device's secret), the
    /// audience of a topic, every group, webhook and person route, and the approval rules.
    static func apiRoutesWithACaller() throws -> [Route] {
        try routes().filter { route in
            // A room's post and its withdrawal are a member's device's alone.
            let devicesOnly =
                route.path.hasSuffix("/messages") && route.method == .post
                || route.path.contains("/messages/") && route.method == .delete
            return !route.path.hasPrefix("/portal") && !route.path.hasPrefix("/device") && !devicesOnly
                && (route.method != .get || route.path == "/audience" || route.path.hasPrefix("/group")
                    || route.path.hasPrefix("/webhook") || route.path.hasPrefix("/person")
                    || route.path.hasPrefix("/settings"))
        }
    }

    /// Of those, the ones that senders use; admins alone use the others.
    static let senderRoutes: Set<String> = [
        "POST /message", "GET /audience",
        // A message's sender corrects and withdraws it; another user who may send there approves or rejects it.
        "PUT /message/\(ObjectIDs.missing)", "DELETE /message/\(ObjectIDs.missing)",
        "POST /message/\(ObjectIDs.missing)/approve", "POST /message/\(ObjectIDs.missing)/reject",
        // Events: made, edited, cancelled and given a rota by those who may send to their audience.
        "POST /event", "PUT /event/\(ObjectIDs.missing)", "DELETE /event/\(ObjectIDs.missing)",
        "PUT /event/\(ObjectIDs.missing)/occurrences/\(ObjectIDs.missing)",
        "DELETE /event/\(ObjectIDs.missing)/occurrences/\(ObjectIDs.missing)",
    ]

    @Test func everyAPIRouteOfAGroupAnswers401AnonymousAnd403ToAnotherRole() async throws {
        let routes = try Self.apiRoutesWithACaller()
        // Nine cube writes, sending, correcting, withdrawing, approving, rejecting, the audience, eight group routes
        // (a room's history too, which members' devices also read), five webhook routes, five person routes (their
        // devices, an unbind, the export, the erasure and its progress), the approval rules (read and change), five
        // event writes.
        #expect(routes.count == 40, "\(routes)")
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let before = try await hub.cubeSnapshot()
            for route in routes {
                let anonymous = try await hub.request(route.method, route.path)
                #expect(anonymous.status == .unauthorized && anonymous.errorCode == "unauthenticated", "\(route)")
                let communicator = try await hub.request(route.method, route.path, as: .communicator)
                if Self.senderRoutes.contains(route.description) {
                    #expect(communicator.status != .unauthorized && communicator.status != .forbidden, "\(route)")
                } else {
                    #expect(communicator.status == .forbidden && communicator.errorCode == "forbidden", "\(route)")
                }
                // The group lets an admin through to the handler (which refuses the empty request on its own terms).
                let admin = try await hub.request(route.method, route.path, as: .admin)
                #expect(admin.status != .unauthorized && admin.status != .forbidden, "\(route)")
            }
            #expect(try await hub.cubeSnapshot() == before)
        }
    }

    @Test func everyPortalPageOfAGroupSendsAnonymousVisitorsToLogInAndAdminPagesRefuseCommunicators() async throws {
        let routes = try Self.routes().filter {
            $0.path.hasPrefix("/portal") && !$0.path.hasPrefix("/portal/login") && !$0.path.hasPrefix("/portal/static")
        }
        let adminPages = routes.filter { $0.path.hasPrefix("/portal/admin/") }
        // 7 pages for each level of the cube, 10 for users and tokens, 4 for groups, the persons page, the audit log,
        // the settings (the page and its approval form).
        #expect(adminPages.count == 39)
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var anonymous = PortalBrowser(hub: hub)
            for route in routes {
                let response =
                    route.method == .post
                    ? try await anonymous.post(route.path, [:])
                    : try await anonymous.get(route.path)
                #expect(response.status == .seeOther, "\(route)")
                #expect(response.headers[.location]?.hasPrefix("/portal/login") == true, "\(route)")
            }
            var communicator = PortalBrowser(hub: hub)
            _ = try await communicator.login("ann", HubHarness.annPassword)
            let csrf = try PortalBrowser.csrf(in: try await communicator.get("/portal"))
            for route in adminPages {
                let response =
                    route.method == .post
                    ? try await communicator.post(route.path, ["_csrf": csrf])
                    : try await communicator.get(route.path)
                #expect(response.status == .forbidden && response.text.contains("Admins only"), "\(route)")
            }
            // The pages of every logged-in user open for a communicator.
            for route in routes where route.method == .get && !route.path.hasPrefix("/portal/admin") {
                let response = try await communicator.get(route.path)
                #expect(response.status != .seeOther && response.status != .forbidden, "\(route)")
            }
            var admin = PortalBrowser(hub: hub)
            _ = try await admin.login("root", PortalTests.adminPassword)
            for route in adminPages where route.method == .get {
                let response = try await admin.get(route.path)
                #expect(response.status != .seeOther && response.status != .forbidden, "\(route)")
            }
        }
    }
}
