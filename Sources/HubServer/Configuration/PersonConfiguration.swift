import HubCore

/// How devices are bound to persons: how their assertions are verified (`PERSON_ASSERTION_SECRET`, `_JWKS`,
/// `_ISSUER`, `_AUDIENCE`, `_CLAIM`), and whether they must carry the device's nonce (`_NONCE`). Neither a secret nor
/// a JWKS: binding is refused.
public struct PersonConfiguration: Sendable {
    /// The verifier's settings.
    public var assertions: PersonAssertionSettings

    public init(assertions: PersonAssertionSettings = PersonAssertionSettings()) {
        self.assertions = assertions
    }

    /// The person configuration the environment gives.
    /// - Throws: `ConfigurationError` naming a variable whose value cannot be used: a secret shorter than 32 bytes, a
    ///   secret or JWKS without an
    ///   issuer and an audience, a JWKS that is neither a path nor an https URL, a claim name that is not one, a
    ///   nonce mode other than `off` and `required`.
    static func fromEnvironment(_ environment: [String: String]) throws -> PersonConfiguration {
        /// Unset and empty are the same: compose files pass every variable, empty when not given.
        func value(_ text: String?) -> String? { text?.isEmpty == false ? text : nil }
        var settings = PersonAssertionSettings()
        if let secret = value(environment["PERSON_ASSERTION_SECRET"]) {
            // HS256 wants a key at least as long as its digest (jwt-kit stops on a shorter one).
            guard (32...4096).contains(secret.utf8.count) else {
                throw ConfigurationError(
                    "PERSON_ASSERTION_SECRET must be 32 to 4096 bytes long (HS256 needs at least 32)")
            }
            settings.secret = secret
        }
        if let source = value(environment["PERSON_ASSERTION_JWKS"]) {
            if source.hasPrefix("https://") {
                guard source.utf8.count > 8, !source.contains(where: \.isWhitespace) else {
                    throw ConfigurationError("PERSON_ASSERTION_JWKS must be a file path or an https URL")
                }
                settings.keySet = .url(source)
            } else if source.contains("://") {
                throw ConfigurationError(
                    "PERSON_ASSERTION_JWKS must be a file path or an https URL, not another scheme")
            } else {
                settings.keySet = .file(source)
            }
        }
        let issuer = value(environment["PERSON_ASSERTION_ISSUER"]),
            audience = value(environment["PERSON_ASSERTION_AUDIENCE"])
        if settings.isConfigured {
            guard let issuer else {
                throw ConfigurationError(
                    "PERSON_ASSERTION_ISSUER must be set with PERSON_ASSERTION_SECRET or PERSON_ASSERTION_JWKS")
            }
            guard let audience else {
                throw ConfigurationError(
                    "PERSON_ASSERTION_AUDIENCE must be set with PERSON_ASSERTION_SECRET or PERSON_ASSERTION_JWKS")
            }
            settings.issuer = issuer
            settings.audience = audience
        }
        if let claim = value(environment["PERSON_ASSERTION_CLAIM"]) {
            guard claim.utf8.count <= 64,
                claim.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") })
            else {
                throw ConfigurationError(
                    "PERSON_ASSERTION_CLAIM must be a claim name (up to 64 visible ASCII characters), such as sub or email"
                )
            }
            settings.claim = claim
        }
        switch value(environment["PERSON_ASSERTION_NONCE"])?.lowercased() {
        case nil, "off": settings.nonceRequired = false
        case "required": settings.nonceRequired = true
        default: throw ConfigurationError("PERSON_ASSERTION_NONCE must be off or required")
        }
        return PersonConfiguration(assertions: settings)
    }
}
