extension HubConfiguration {
    /// Every environment variable the hub reads. Each is also a flag of `msi-hub serve`, named as the variable in
    /// lower case with dashes (`TRUSTED_PROXIES` is `--trusted-proxies`), but for `secretVariables`.
    /// `scripts/check-compose.py` checks this list against the variables the sources read.
    public static let variables: [String] = [
        "MONGODB_URI", "HOST", "PORT", "LOG_LEVEL", "LOG_FORMAT", "DATABASE_WRITE_DEADLINE_MS",
        "GOOGLE_APPLICATION_CREDENTIALS", "FCM_ENDPOINT", "FCM_MODE", "FCM_ALLOW_INSECURE", "FCM_PAYLOAD_LIMIT",
        "FCM_HTTP2_PRIOR_KNOWLEDGE",
        "RELAY_CONCURRENCY", "RELAY_LEASE_SECONDS", "RELAY_DEADLINE_SECONDS", "FCM_SEND_RATE",
        "RELAY_MAX_BACKLOG_SECONDS", "APNS_CRITICAL_ALERTS", "ANDROID_CHANNEL_PASSIVE", "ANDROID_CHANNEL_ACTIVE",
        "ANDROID_CHANNEL_TIME_SENSITIVE", "ANDROID_CHANNEL_CRITICAL",
        "PORTAL_SECURE_COOKIES", "PORTAL_SESSION_MAX_HOURS", "SCHOOL_TIME_ZONE", "TRUSTED_PROXIES", "METRICS_TOKEN",
        "HTTP_IDLE_TIMEOUT_SECONDS", "HTTP_HEADER_TIMEOUT_SECONDS", "HTTP_REQUEST_TIMEOUT_SECONDS",
        "HTTP_MAX_CONNECTIONS",
        "DEVICE_REGISTRATION_KEY", "DEVICE_REGISTRATIONS_PER_MINUTE", "FCM_SUBSCRIPTION_RATE", "DEVICE_RETENTION_DAYS",
        "DEVICE_REPAIR_HOURS", "ROOM_POSTS_PER_MINUTE", "UNREAD_COUNTS", "DIGEST_HOUR",
        "PERSON_ASSERTION_SECRET", "PERSON_ASSERTION_JWKS", "PERSON_ASSERTION_ISSUER", "PERSON_ASSERTION_AUDIENCE",
        "PERSON_ASSERTION_CLAIM", "PERSON_ASSERTION_NONCE", "WEBHOOK_ALLOWED_NETWORKS", "DEFAULT_LANGUAGE",
        "APPROVAL_GROUP_SIZE", "APPROVAL_TIMEOUT", "APPROVAL_DEFAULTS",
        "OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_SCOPES", "OIDC_DISPLAY_NAME",
        "OIDC_USERNAME_CLAIM", "OIDC_ROLE_CLAIM", "OIDC_ADMIN_GROUPS", "OIDC_COMMUNICATOR_GROUPS", "OIDC_ACCESS_MAP",
        "OIDC_ONLY", "OIDC_AUTO_REDIRECT", "OIDC_REDIRECT_URL", "AUDIT_PSEUDONYM_KEY", "ERASURE_BLOCK_DAYS",
        "RETENTION_DELIVERIES_DAYS", "RETENTION_RECEIPTS_DAYS", "RETENTION_MESSAGES_DAYS", "RETENTION_ROOM_POSTS_DAYS",
    ]

    /// Variables that hold a secret: never flags, since a command line is visible to every user of the machine.
    public static let secretVariables: Set<String> = [
        "DEVICE_REGISTRATION_KEY", "METRICS_TOKEN", "PERSON_ASSERTION_SECRET", "OIDC_CLIENT_SECRET",
        "AUDIT_PSEUDONYM_KEY",
    ]

    /// `environment` with `flags` on top: `--name value` or `--name=value` sets the variable `NAME`.
    /// - Throws: `ConfigurationError` for a flag that names no variable, names a secret, or has no value.
    public static func environment(_ environment: [String: String], flags: [String]) throws -> [String: String] {
        var environment = environment
        var remaining = flags[...]
        while let flag = remaining.popFirst() {
            guard flag.hasPrefix("--"), flag.count > 2 else {
                throw ConfigurationError(
                    "unexpected argument \"\(flag)\": settings are flags such as --trusted-proxies 10.0.0.0/8")
            }
            let parts = flag.dropFirst(2).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let variable = String(parts[0].uppercased().map { $0 == "-" ? "_" : $0 })
            guard variables.contains(variable) else {
                throw ConfigurationError(
                    "unknown flag --\(parts[0]): the flags are the configuration's variables in lower case with dashes")
            }
            guard !secretVariables.contains(variable) else {
                throw ConfigurationError(
                    "\(variable) holds a secret: set it in the environment, not as a flag (every user of the machine sees a command line)"
                )
            }
            if parts.count == 2 {
                environment[variable] = String(parts[1])
            } else if let value = remaining.first, !value.hasPrefix("--") {
                environment[variable] = value
                remaining = remaining.dropFirst()
            } else {
                throw ConfigurationError("--\(parts[0]) needs a value")
            }
        }
        return environment
    }
}
