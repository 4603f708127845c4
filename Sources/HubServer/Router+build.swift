import DAO
import HubCore
import Hummingbird
import Logging

/// The routes and middleware of the hub over `services`, the web portal's included.
public func buildRouter(
    services: HubServices, portal: PortalConfiguration = PortalConfiguration(),
    trustedProxies: TrustedProxies = TrustedProxies()
) -> Router<HubRequestContext> {
    buildRouter(
        services: services, portal: portal, devices: DeviceConfiguration(), answers: CubeAnswers(),
        trustedProxies: trustedProxies)
}

func buildRouter(
    services: HubServices, portal: PortalConfiguration, devices: DeviceConfiguration,
    answers: CubeAnswers, metricsToken: String? = nil,
    trustedProxies: TrustedProxies = TrustedProxies()
) -> Router<HubRequestContext> {
    // Every GET route answers HEAD too (RFC 9110 §9.3.2): GET's status and headers, no body.
    let router = Router(context: HubRequestContext.self, options: .autoGenerateHeadEndpoints)
    let allowed = AllowedMethods()
    router.add(middleware: ResponseHeadersMiddleware())
    router.add(middleware: ClientAddressMiddleware(proxies: trustedProxies))
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: LogRequestsMiddleware(.debug))
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: MethodNotAllowedMiddleware(allowed: allowed))
    router.add(middleware: AuthMiddleware(accounts: services.accounts))
    // Each role is stated once, by its group; no handler checks one. The device routes take the device's secret.
    let admins = router.group().add(middleware: RequireRole(.admin))
    let senders = router.group().add(middleware: RequireRole(.admin, .communicator))
    let adminsOrDevices = router.group().add(middleware: RequireRoleOrDevice(.admin))
    let staffOrDevices = router.group().add(middleware: RequireRoleOrDevice(.admin, .communicator))
    CubeController(services: services, answers: answers).addRoutes(to: router, admins: admins)
    MessageController(services: services).addRoutes(to: router, senders: senders)
    MessageEditController(services: services).addRoutes(to: senders)
    EventController(services: services).addRoutes(to: senders, staffOrDevices: staffOrDevices)
    ApprovalController(services: services).addRoutes(to: senders, admins: admins)
    DeliveryController(services: services).addRoutes(to: senders)
    ReceiptController(services: services).addRoutes(to: router, senders: senders)
    DeviceController(services: services, configuration: devices).addRoutes(to: router)
    BroadcastController(services: services).addRoutes(to: router)
    AudienceController(services: services).addRoutes(to: senders)
    GroupController(services: services).addRoutes(to: admins)
    RoomController(services: services).addRoutes(to: router, adminsOrDevices: adminsOrDevices)
    PersonController(services: services).addRoutes(to: admins)
    WebhookController(services: services).addRoutes(to: admins)
    HealthController(services: services).addRoutes(to: router)
    MetricsController(services: services, token: metricsToken).addRoutes(to: router)
    Portal(services: services, configuration: portal).addRoutes(to: router)
    allowed.fill(from: router)
    return router
}
