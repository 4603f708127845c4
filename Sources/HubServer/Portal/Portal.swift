import DAO
import HTTPTypes
import HubCore
import Hummingbird

/// The web portal for communicators and admins, under `/portal` (and `/`, which leads there).
struct Portal {
    let services: HubServices
    let configuration: PortalConfiguration

    /// Adds the portal's routes and their middleware to `router`.
    func addRoutes(to router: Router<HubRequestContext>) {
        // Broken resources are a packaging bug: fail at start, not at the first page.
        let pages: PortalPages, files: PortalStaticFiles
        do {
            pages = try PortalPages.bundled()
            files = try PortalStaticFiles.bundled()
        } catch {
            preconditionFailure("the portal's bundled templates or files cannot be read: \(error)")
        }
        router.get("/") { _, _ in Response.redirect(to: "/portal", type: .found) }
        let portal = router.group("/portal", context: PortalRequestContext.self)
        portal.group("/static").add(middleware: PortalPageMiddleware(pages: pages)).get(":file") { request, context in
            try files.response(name: context.parameters.get("file") ?? "", request: request)
        }
        // The session first, so that error pages too show who is logged in; then pages, then the CSRF check.
        let pagesGroup = portal.group()
            .add(middleware: PortalSessionMiddleware(accounts: services.accounts, configuration: configuration))
            .add(middleware: PortalPageMiddleware(pages: pages))
            .add(middleware: CSRFMiddleware())
        // Each role is stated once, by its group (after the CSRF check, as the handlers checked it): anonymous
        // visitors are sent to log in, communicators get a 403 page under /portal/admin.
        let users = pagesGroup.group().add(middleware: RequireRole(.admin, .communicator))
        let admins = pagesGroup.group("/admin").add(middleware: RequireRole(.admin))
        LoginController(services: services, configuration: configuration, pages: pages)
            .addRoutes(to: pagesGroup, users: users)
        if let signIn = services.staffSignIn, let options = configuration.staffSignIn {
            ProviderSignInController(
                signIn: signIn, services: services, configuration: configuration, options: options, pages: pages
            ).addRoutes(to: pagesGroup)
        }
        let school = SchoolTime(zone: configuration.schoolTimeZone)
        SendController(services: services, pages: pages, payloadLimit: configuration.payloadLimit, school: school)
            .addRoutes(to: users)
        PortalEditController(services: services).addRoutes(to: users)
        SentController(services: services, pages: pages).addRoutes(to: users)
        EventsController(services: services, pages: pages, school: school).addRoutes(to: users)
        ApprovalsController(services: services, pages: pages).addRoutes(to: users)
        ReachController(services: services).addRoutes(to: users)
        CubeAdminController(services: services, pages: pages).addRoutes(to: admins)
        AccountsAdminController(services: services, pages: pages).addRoutes(to: admins)
        GroupsAdminController(services: services, pages: pages).addRoutes(to: admins)
        PersonsAdminController(services: services, pages: pages, school: school).addRoutes(to: admins)
        AuditAdminController(services: services, pages: pages).addRoutes(to: admins)
        SettingsAdminController(services: services, pages: pages).addRoutes(to: admins)
    }
}
