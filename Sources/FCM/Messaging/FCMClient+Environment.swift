import Curl
import Logging

extension FCMClient {
    /// The client the environment describes (ARCHITECTURE.md's configuration table):
    /// `GOOGLE_APPLICATION_CREDENTIALS`, `FCM_ENDPOINT`, `FCM_MODE` (`send` with credentials, else `log`),
    /// `FCM_ALLOW_INSECURE` (plain HTTP to a non-loopback `FCM_ENDPOINT` or `token_uri`; `false`),
    /// `FCM_HTTP2_PRIOR_KNOWLEDGE` (HTTP/2 without TLS to an `http://` `FCM_ENDPOINT`; `false`).
    /// - Throws: `CredentialsError` for an unusable key file; `RelayConfigurationError` for an unknown
    ///   `FCM_MODE`, `send`/`validate` without credentials, a plain-HTTP endpoint or `token_uri` on another
    ///   machine without `FCM_ALLOW_INSECURE=true`, or an `FCM_HTTP2_PRIOR_KNOWLEDGE` neither true nor false.
    public static func fromEnvironment(
        _ environment: [String: String],
        httpClient: CurlClient,
        payloadLimit: Int = FCMMappingOptions.defaultPayloadLimit,
        logger: Logger = Logger(label: "msi-hub.relay.fcm")
    ) throws -> FCMClient {
        let credentialsPath = environment["GOOGLE_APPLICATION_CREDENTIALS"].flatMap { $0.isEmpty ? nil : $0 }
        let plainHTTP = try PlainHTTPPolicy(environment: environment)
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
            payloadLimit: payloadLimit,
            http2PriorKnowledge: try flag("FCM_HTTP2_PRIOR_KNOWLEDGE", in: environment)
        )
        if let endpoint = environment["FCM_ENDPOINT"], !endpoint.isEmpty {
            try plainHTTP.check(endpoint, source: "FCM_ENDPOINT")
        }
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
        try plainHTTP.check(
            account.tokenURI,
            source: "the token_uri of GOOGLE_APPLICATION_CREDENTIALS (\"\(credentialsPath)\")")
        return FCMClient(account: account, httpClient: httpClient, configuration: configuration, logger: logger)
    }
}

/// The value of the true-or-false variable `name` (empty or absent: false).
/// - Throws: `RelayConfigurationError` naming the variable when the value is neither.
func flag(_ name: String, in environment: [String: String]) throws(RelayConfigurationError) -> Bool {
    switch environment[name]?.lowercased() {
    case nil, "", "0", "false", "no": return false
    case "1", "true", "yes": return true
    case let value?: throw RelayConfigurationError(message: "\(name) must be true or false, not \"\(value)\"")
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
