import Logging

extension FCMClient {
    /// The client the environment describes (ARCHITECTURE.md's configuration table):
    /// `GOOGLE_APPLICATION_CREDENTIALS`, `FCM_ENDPOINT`, `FCM_MODE` (`send` with credentials, else `log`).
    /// - Throws: `CredentialsError` for an unusable key file; `RelayConfigurationError` for an unknown
    ///   `FCM_MODE`, or `send`/`validate` without credentials.
    public static func fromEnvironment(
        _ environment: [String: String],
        httpClient: CurlClient,
        payloadLimit: Int = FCMMappingOptions.defaultPayloadLimit,
        logger: Logger = Logger(label: "msi-hub.relay.fcm")
    ) throws -> FCMClient {
        let credentialsPath = environment["GOOGLE_APPLICATION_CREDENTIALS"].flatMap { $0.isEmpty ? nil : $0 }
        let mode: Mode
        switch environment["FCM_MODE"].flatMap({ $0.isEmpty ? nil : $0 }) {
        case nil:
            mode = credentialsPath == nil ? .log : .send
        case let value?:
            guard let parsed = Mode(rawValue: value.lowercased()) else {
                throw RelayConfigurationError(message: "FCM_MODE must be send, validate or log, not \"\(value)\"")
            }
            mode = parsed
        }
        let configuration = Configuration(
            endpoint: environment["FCM_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 } ?? Configuration.defaultEndpoint,
            mode: mode,
            payloadLimit: payloadLimit
        )
        guard let credentialsPath else {
            guard mode == .log else {
                throw RelayConfigurationError(
                    message: "FCM_MODE=\(mode.rawValue) needs GOOGLE_APPLICATION_CREDENTIALS "
                        + "(a service-account key file)"
                )
            }
            return .logOnly(configuration: configuration, logger: logger)
        }
        let account = try ServiceAccount(contentsOfFile: credentialsPath)
        return FCMClient(account: account, httpClient: httpClient, configuration: configuration, logger: logger)
    }
}

/// The relay's settings do not make sense together; the message says which and why.
public struct RelayConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, for the person starting the hub.
    public var message: String

    /// An error saying `message`.
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
