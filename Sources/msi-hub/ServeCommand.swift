import ArgumentParser
import HubServer
import Logging

/// `msi-hub serve`: runs the HTTP server until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the hub's HTTP server.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The address to listen on (HOST).") var host: String?
    @Option(help: "The port to listen on (PORT).") var port: Int?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error (LOG_LEVEL).")
    var logLevel: String?
    @Option(name: .customLong("log-format"), help: "text or json (LOG_FORMAT).") var logFormat: String?
    @Option(
        name: .customLong("credentials"), help: "A Firebase service-account JSON file (GOOGLE_APPLICATION_CREDENTIALS)."
    )
    var credentials: String?
    @Option(
        name: .customLong("fcm-endpoint"),
        help: "The base URL standing in for https://fcm.googleapis.com (FCM_ENDPOINT).")
    var fcmEndpoint: String?
    @Option(name: .customLong("fcm-mode"), help: "send, validate or log (FCM_MODE).") var fcmMode: String?
    @Option(
        name: .customLong("relay-concurrency"),
        help: "FCM requests in flight at once; 0: do not relay (RELAY_CONCURRENCY).")
    var relayConcurrency: Int?
    @Flag(name: .customLong("portal-secure-cookies"), help: "Secure portal cookies, for HTTPS (PORTAL_SECURE_COOKIES).")
    var portalSecureCookies = false
    @Argument(
        parsing: .allUnrecognized,
        help: "Any other variable of the configuration as a flag: --trusted-proxies 10.0.0.0/8 (secrets excepted).")
    var settings: [String] = []

    func run() async throws {
        var configuration = try database.configuration(settings: settings)
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if portalSecureCookies { configuration.portal.secureCookies = true }
        if let logLevel {
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw ValidationError("unknown log level \(logLevel)")
            }
            configuration.logLevel = level
        }
        if let logFormat {
            guard let format = LogFormat(rawValue: logFormat) else {
                throw ValidationError("log format must be text or json")
            }
            configuration.logFormat = format
        }
        if let credentials { configuration.relay.fcmEnvironment["GOOGLE_APPLICATION_CREDENTIALS"] = credentials }
        if let fcmEndpoint { configuration.relay.fcmEnvironment["FCM_ENDPOINT"] = fcmEndpoint }
        if let fcmMode { configuration.relay.fcmEnvironment["FCM_MODE"] = fcmMode }
        if let relayConcurrency {
            guard (0...256).contains(relayConcurrency) else {
                throw ValidationError("--relay-concurrency must be 0 to 256")
            }
            configuration.relay.concurrency = relayConcurrency
        }
        HubLogging.bootstrap(configuration)
        try await runApplication(configuration: configuration)
    }
}
