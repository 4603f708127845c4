import HubCore
import HubModel
import Logging
import Mongo

/// Everything the hub is configured with; each value comes from an environment variable or a flag.
public struct HubConfiguration: Sendable {
    /// The database (`MONGODB_URI`).
    public var mongoURI: String
    /// Where the HTTP server listens (`HOST`, `PORT`; port 0 picks a free one).
    public var host: String
    public var port: Int
    /// How much the hub logs (`LOG_LEVEL`) and in which form (`LOG_FORMAT`: text or json).
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    /// Connections to the database, and threads that run its blocking calls.
    public var databasePoolSize: Int
    /// How long a request waits for the database before the hub answers 503.
    public var serverSelectionTimeoutMS: Int32
    /// How long a message's insert may go unacknowledged before the hub stops waiting and settles its outcome
    /// (`DATABASE_WRITE_DEADLINE_MS`); also how long `/readyz` waits for the database.
    public var writeDeadline: Duration
    /// The largest request body accepted (bigger ones get 413).
    public var maxBodySize: Int
    /// The relay to FCM.
    public var relay: RelayConfiguration
    /// The web portal's sessions (`PORTAL_SECURE_COOKIES`).
    public var portal: PortalConfiguration
    /// Device registration and the subscription reconciler.
    public var devices: DeviceConfiguration
    /// How devices are bound to persons (`PERSON_ASSERTION_*`); none configured: binding is refused.
    public var persons = PersonConfiguration()
    /// Connection deadlines and the cap on open connections (`HTTP_IDLE_TIMEOUT_SECONDS`,
    /// `HTTP_HEADER_TIMEOUT_SECONDS`, `HTTP_REQUEST_TIMEOUT_SECONDS`, `HTTP_MAX_CONNECTIONS`).
    public var connections = ConnectionConfiguration()
    /// The proxies whose `X-Forwarded-For` names the client (`TRUSTED_PROXIES`, comma-separated CIDRs); none by default.
    public var trustedProxies = TrustedProxies()
    /// The Bearer token `/metrics` needs (`METRICS_TOKEN`); nil: anyone may scrape.
    public var metricsToken: String?
    /// Where webhook deliveries may go (`WEBHOOK_ALLOWED_NETWORKS`) and how they are retried.
    public var webhooks = WebhookConfiguration()
    /// The language of a message's own texts when it has translations and names none (`DEFAULT_LANGUAGE`).
    public var defaultLanguage = LocaleLanguage.defaultLanguage
    /// Which sends wait for a second person (`APPROVAL_GROUP_SIZE`, `APPROVAL_TIMEOUT`, `APPROVAL_DEFAULTS`).
    public var approval = ApprovalPolicy()
    /// What the hub keeps of persons and for how long (`AUDIT_PSEUDONYM_KEY`, `ERASURE_BLOCK_DAYS`).
    public var privacy = PrivacyConfiguration()

    /// The local database that `make run` starts, reached as `scripts/database-uri.sh` says (without retryable writes:
    /// the embedded server's cost of every write would grow with the writes of the last half hour).
    public static let defaultMongoURI = "mongodb://127.0.0.1:27117/msi?retryWrites=false"

    public init(
        mongoURI: String = HubConfiguration.defaultMongoURI,
        host: String = "127.0.0.1",
        port: Int = 8080,
        logLevel: Logger.Level = .info,
        logFormat: LogFormat = .text,
        databasePoolSize: Int = 8,
        serverSelectionTimeoutMS: Int32 = 2_000,
        writeDeadline: Duration = .seconds(5),
        maxBodySize: Int = 64 * 1024,
        relay: RelayConfiguration = RelayConfiguration(),
        portal: PortalConfiguration = PortalConfiguration(),
        devices: DeviceConfiguration = DeviceConfiguration(),
        metricsToken: String? = nil
    ) {
        self.mongoURI = mongoURI
        self.host = host
        self.port = port
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.databasePoolSize = databasePoolSize
        self.serverSelectionTimeoutMS = serverSelectionTimeoutMS
        self.writeDeadline = writeDeadline
        self.maxBodySize = maxBodySize
        self.relay = relay
        self.portal = portal
        self.devices = devices
        self.metricsToken = metricsToken
    }

    /// The configuration the environment gives, defaults elsewhere.
    /// - Throws: `ConfigurationError` naming a variable whose value cannot be used.
    public static func fromEnvironment(_ environment: [String: String]) throws -> HubConfiguration {
        var configuration = HubConfiguration()
        if let uri = environment["MONGODB_URI"], !uri.isEmpty { configuration.mongoURI = uri }
        if let host = environment["HOST"], !host.isEmpty { configuration.host = host }
        if let port = environment["PORT"], !port.isEmpty {
            guard let value = Int(port), (0...65535).contains(value) else {
                throw ConfigurationError("PORT must be a number from 0 to 65535, not \"\(port)\"")
            }
            configuration.port = value
        }
        if let level = environment["LOG_LEVEL"], !level.isEmpty {
            guard let value = Logger.Level(rawValue: level.lowercased()) else {
                throw ConfigurationError(
                    "LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
            }
            configuration.logLevel = value
        }
        if let format = environment["LOG_FORMAT"], !format.isEmpty {
            guard let value = LogFormat(rawValue: format.lowercased()) else {
                throw ConfigurationError("LOG_FORMAT must be text or json, not \"\(format)\"")
            }
            configuration.logFormat = value
        }
        if let text = environment["DATABASE_WRITE_DEADLINE_MS"], !text.isEmpty {
            guard let value = Int(text), (100...120_000).contains(value) else {
                throw ConfigurationError(
                    "DATABASE_WRITE_DEADLINE_MS must be a whole number from 100 to 120000, not \"\(text)\"")
            }
            configuration.writeDeadline = .milliseconds(value)
        }
        configuration.relay = try RelayConfiguration.fromEnvironment(environment)
        configuration.portal = try PortalConfiguration.fromEnvironment(environment)
        configuration.devices = try DeviceConfiguration.fromEnvironment(environment)
        configuration.persons = try PersonConfiguration.fromEnvironment(environment)
        configuration.connections = try ConnectionConfiguration.fromEnvironment(environment)
        configuration.webhooks = try WebhookConfiguration.fromEnvironment(environment)
        configuration.privacy = try PrivacyConfiguration.fromEnvironment(environment)
        if let list = environment["TRUSTED_PROXIES"] {
            do {
                configuration.trustedProxies = try TrustedProxies(parsing: list)
            } catch let error as AddressRangeError {
                throw ConfigurationError("TRUSTED_PROXIES must list CIDRs separated by commas: \(error)")
            }
        }
        if let language = environment["DEFAULT_LANGUAGE"], !language.isEmpty {
            guard let code = MessageService.Submission.languageCode(language) else {
                throw ConfigurationError(
                    "DEFAULT_LANGUAGE must be a two- or three-letter language code such as en, not \"\(language)\"")
            }
            configuration.defaultLanguage = code
        }
        configuration.approval = try approvalPolicy(environment)
        if let token = environment["METRICS_TOKEN"], !token.isEmpty {
            // Bearer values with these prefixes are API tokens and device secrets, which the hub checks as such.
            guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }), token.utf8.count <= 256,
                !token.hasPrefix("msi_"), !token.hasPrefix("msd_")
            else {
                throw ConfigurationError(
                    "METRICS_TOKEN must be up to 256 visible ASCII characters without spaces, not starting with msi_ or msd_"
                )
            }
            configuration.metricsToken = token
        }
        return configuration
    }

    var mongoConfiguration: MongoConfiguration {
        MongoConfiguration(
            uri: mongoURI, serverSelectionTimeoutMS: serverSelectionTimeoutMS,
            connectTimeoutMS: min(serverSelectionTimeoutMS, 2_000), maxPoolSize: databasePoolSize)
    }
}

/// How the hub relays messages to FCM.
public struct RelayConfiguration: Sendable {
    /// The variables the FCM client reads: `GOOGLE_APPLICATION_CREDENTIALS`, `FCM_ENDPOINT`, `FCM_MODE`,
    /// `FCM_ALLOW_INSECURE`, `FCM_HTTP2_PRIOR_KNOWLEDGE`.
    public var fcmEnvironment: [String: String]
    /// The data payload a component may carry before its text is cut (`FCM_PAYLOAD_LIMIT`, bytes).
    public var payloadLimit: Int
    /// FCM requests in flight at once (`RELAY_CONCURRENCY`); 0: this process stores messages but does not
    /// relay them (other replicas do).
    public var concurrency: Int
    /// How long a lease holds a message (`RELAY_LEASE_SECONDS`), renewed while the message is being sent: a
    /// crashed process's messages are sent by others after this.
    public var lease: Duration
    /// How long a message is retried before it is marked failed (`RELAY_DEADLINE_SECONDS`).
    public var deadline: Duration
    /// Per-device sends (messages to persons and groups) per second, all replicas together (`FCM_SEND_RATE`).
    public var sendRate = 10_000
    /// Per-device requests of one message in flight at most.
    public var fanOutInFlight = 500
    /// Past this age of the oldest unsent message, POST /message answers 503 and stores nothing
    /// (`RELAY_MAX_BACKLOG_SECONDS`; 0: never).
    public var maxBacklog: Duration? = .seconds(30)
    /// How urgency maps to APNs and Android (`APNS_CRITICAL_ALERTS`, `ANDROID_CHANNEL_*`).
    public var urgency = UrgencyConfiguration()
    /// The clock devices' quiet hours are read by and held-back sends fall due by (Unix ms); nil: the hub's clock.
    /// Not a variable: tests move it past a window instead of waiting for it.
    public var quietHoursClock: (@Sendable () -> Int64)? = nil
    /// The clock the daily digests fall due by (Unix ms); nil: the hub's clock. Not a variable: tests move it to a
    /// digest's hour instead of waiting for it.
    public var digestClock: (@Sendable () -> Int64)? = nil

    /// The names `fcmEnvironment` takes from the environment.
    public static let fcmVariables = [
        "GOOGLE_APPLICATION_CREDENTIALS", "FCM_ENDPOINT", "FCM_MODE", "FCM_ALLOW_INSECURE", "FCM_HTTP2_PRIOR_KNOWLEDGE",
    ]

    public init(
        fcmEnvironment: [String: String] = [:], payloadLimit: Int = 2048, concurrency: Int = 16,
        lease: Duration = .seconds(5), deadline: Duration = .seconds(6 * 3600)
    ) {
        self.fcmEnvironment = fcmEnvironment
        self.payloadLimit = payloadLimit
        self.concurrency = concurrency
        self.lease = lease
        self.deadline = deadline
    }

    /// The relay configuration the environment gives.
    /// - Throws: `ConfigurationError` naming a variable whose value cannot be used.
    static func fromEnvironment(_ environment: [String: String]) throws -> RelayConfiguration {
        var relay = RelayConfiguration(fcmEnvironment: environment.filter { fcmVariables.contains($0.key) })
        if let value = try environment.number("FCM_PAYLOAD_LIMIT", in: 512...4096) { relay.payloadLimit = value }
        if let value = try environment.number("RELAY_CONCURRENCY", in: 0...256) { relay.concurrency = value }
        if let value = try environment.number("RELAY_LEASE_SECONDS", in: 1...3600) { relay.lease = .seconds(value) }
        if let value = try environment.number("RELAY_DEADLINE_SECONDS", in: 60...(28 * 86_400)) {
            relay.deadline = .seconds(value)
        }
        if let value = try environment.number("FCM_SEND_RATE", in: 1...1_000_000) { relay.sendRate = value }
        relay.urgency = try UrgencyConfiguration.fromEnvironment(environment)
        if let value = try environment.number("RELAY_MAX_BACKLOG_SECONDS", in: 0...86_400) {
            relay.maxBacklog = value == 0 ? nil : .seconds(value)
        }
        return relay
    }
}

/// How log lines are written.
public enum LogFormat: String, Sendable, CaseIterable {
    /// One human-readable line per event.
    case text
    /// One JSON object per line, for log shippers.
    case json
}

/// A configuration value that cannot be used, named for the operator.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
