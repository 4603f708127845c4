import Foundation
import HubTime
import JWTKit
import Logging
import NIOPosix

/// How person assertions are verified (`PERSON_ASSERTION_*`): an HS256 secret, a JWKS, or both; the issuer and
/// audience they must name; the claim that holds the person id.
public struct PersonAssertionSettings: Sendable {
    /// Where a JWKS comes from: a file, or an https URL fetched by the loader the composition root gives.
    public enum KeySetSource: Sendable, Equatable {
        case file(String)
        case url(String)
    }

    /// The HS256 secret of the school's backend (`PERSON_ASSERTION_SECRET`).
    public var secret: String?
    /// The RS256/ES256 keys of the school's identity provider (`PERSON_ASSERTION_JWKS`).
    public var keySet: KeySetSource?
    /// The `iss` an assertion must carry (`PERSON_ASSERTION_ISSUER`).
    public var issuer: String
    /// The `aud` an assertion must carry or include (`PERSON_ASSERTION_AUDIENCE`).
    public var audience: String
    /// The claim that names the person (`PERSON_ASSERTION_CLAIM`): `sub` unless set.
    public var claim: String

    public init(secret: String? = nil, keySet: KeySetSource? = nil, issuer: String = "", audience: String = "",
                claim: String = "sub") {
        self.secret = secret
        self.keySet = keySet
        self.issuer = issuer
        self.audience = audience
        self.claim = claim
    }

    /// Whether a device may be bound at all: a secret or a key set is given.
    public var isConfigured: Bool { secret != nil || keySet != nil }
}

/// The one place a person assertion (a JWT from the school's sign-in) is verified, with vapor/jwt-kit: its
/// signature (HS256 with the secret, RS256/ES256 with the JWKS's keys), `iss`, `aud`, `exp` in the future and `iat`
/// at most ten minutes old. Returns the person id it names and nothing else of it.
///
/// A JWKS is cached: loaded on first use, again when older than `refreshInterval`, and when an assertion names a
/// `kid` it does not hold or its signature does not verify (at most every `unknownKeyInterval`, so bad assertions
/// cannot make it fetch on every request).
public actor PersonAssertionVerifier {
    /// Loads a JWKS document (JSON text) from its source; the composition root gives the one for URLs.
    public typealias KeySetLoader = @Sendable (PersonAssertionSettings.KeySetSource) async throws -> String

    /// How old an `iat` may be.
    static let maximumAgeMilliseconds: Int64 = 10 * 60 * 1000
    /// How far in the future an `iat` may be (clocks differ a little).
    static let leewayMilliseconds: Int64 = 60 * 1000
    /// The longest assertion read: an `id_token` is a few KiB.
    static let maximumLength = 16 * 1024
    /// The longest person id stored.
    public static let maximumPersonLength = 256

    private let settings: PersonAssertionSettings
    private let loadKeySet: KeySetLoader
    private let now: UnixClock
    private let logger: Logger
    private let refreshInterval: Int64
    private let unknownKeyInterval: Int64
    /// The keys in use, and when the JWKS among them was loaded (Unix ms).
    private var keys: JWTKeyCollection?
    private var loadedAt: Int64 = 0

    /// - Parameters:
    ///   - loadKeySet: reads the JWKS; `fileLoader` reads files, and is enough where no URL is configured.
    ///   - refreshInterval: how long a loaded JWKS is used before it is loaded again.
    ///   - unknownKeyInterval: how soon after a load an unknown `kid` may make it load again.
    public init(settings: PersonAssertionSettings, loadKeySet: @escaping KeySetLoader = PersonAssertionVerifier.fileLoader,
                now: @escaping UnixClock = UnixTime.nowMilliseconds, logger: Logger = Logger(label: "msi-hub"),
                refreshInterval: Duration = .seconds(300), unknownKeyInterval: Duration = .seconds(30)) {
        self.settings = settings
        self.loadKeySet = loadKeySet
        self.now = now
        self.logger = logger
        self.refreshInterval = Self.milliseconds(refreshInterval)
        self.unknownKeyInterval = Self.milliseconds(unknownKeyInterval)
    }

    /// A duration in whole milliseconds.
    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// Reads a JWKS file on the thread pool (never on the caller's thread); a URL needs the composition root's loader.
    public static let fileLoader: KeySetLoader = { source in
        guard case .file(let path) = source else {
            throw AssertionRefusal(.invalidAssertion, "the keys to verify assertions cannot be fetched")
        }
        return try await NIOThreadPool.singleton.runIfActive {
            String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        }
    }

    /// Whether binding is configured (the device routes answer with a refusal otherwise).
    public nonisolated var isConfigured: Bool { settings.isConfigured }

    /// The person id `assertion` names, once it verifies.
    /// - Throws: `AssertionRefusal` (`.notConfigured`; `.invalidAssertion` with the reason, never the token).
    public func person(in assertion: String) async throws -> String {
        guard settings.isConfigured else {
            throw AssertionRefusal(.notConfigured, "person binding is not configured")
        }
        guard (1...Self.maximumLength).contains(assertion.utf8.count) else {
            throw AssertionRefusal(.invalidAssertion, "the assertion must be a JWT of at most \(Self.maximumLength) bytes")
        }
        let claims = try await verifiedClaims(assertion)
        return try check(claims)
    }

    /// The claims of `assertion` once its signature verifies, loading the JWKS again once for an unknown `kid`.
    private func verifiedClaims(_ assertion: String) async throws -> PersonClaims {
        var keys = try await currentKeys(forceRefresh: false)
        do {
            return try await keys.verify(assertion, as: PersonClaims.self)
        } catch let error as JWTError where Self.mayBeNewKey(error) && settings.keySet != nil
                                             && now() - loadedAt >= unknownKeyInterval {
            keys = try await currentKeys(forceRefresh: true)
            do {
                return try await keys.verify(assertion, as: PersonClaims.self)
            } catch {
                throw Self.refusal(for: error)
            }
        } catch {
            throw Self.refusal(for: error)
        }
    }

    /// Whether the provider may have a key the JWKS loaded lacks: jwt-kit verifies a token whose `kid` it does not
    /// hold with its default key, so a rotated key shows as a signature that does not verify.
    private static func mayBeNewKey(_ error: JWTError) -> Bool {
        [.unknownKID, .signatureVerificationFailed, .noKeyProvided].contains(error.errorType)
    }

    /// The iss, aud, exp, iat, nbf (when given) and person checks, against the injected clock.
    private func check(_ claims: PersonClaims) throws -> String {
        let now = self.now()
        guard claims.issuer == settings.issuer else {
            throw AssertionRefusal(.invalidAssertion, "the assertion's issuer (iss) is not the configured one")
        }
        guard let audience = claims.audience, audience.contains(settings.audience) else {
            throw AssertionRefusal(.invalidAssertion, "the assertion's audience (aud) does not include the configured one")
        }
        guard let expires = claims.expiresAt else {
            throw AssertionRefusal(.invalidAssertion, "the assertion has no expiry (exp)")
        }
        guard expires > now else {
            throw AssertionRefusal(.invalidAssertion, "the assertion has expired (exp)")
        }
        guard let issued = claims.issuedAt else {
            throw AssertionRefusal(.invalidAssertion, "the assertion has no issue time (iat)")
        }
        guard issued >= now - Self.maximumAgeMilliseconds else {
            throw AssertionRefusal(.invalidAssertion, "the assertion was issued more than 10 minutes ago (iat)")
        }
        guard issued <= now + Self.leewayMilliseconds else {
            throw AssertionRefusal(.invalidAssertion, "the assertion's issue time (iat) is in the future")
        }
        if let notBefore = claims.notBefore, notBefore > now + Self.leewayMilliseconds {
            throw AssertionRefusal(.invalidAssertion, "the assertion is not valid yet (nbf)")
        }
        guard let person = claims.strings[settings.claim] else {
            throw AssertionRefusal(.invalidAssertion, "the assertion has no \(settings.claim) claim naming the person")
        }
        guard (1...Self.maximumPersonLength).contains(person.count) else {
            throw AssertionRefusal(.invalidAssertion,
                                   "the assertion's \(settings.claim) claim must be 1 to \(Self.maximumPersonLength) characters")
        }
        return person
    }

    /// The keys to verify with: the secret and the JWKS, the JWKS loaded again when due. A JWKS that fails to load
    /// keeps the previous keys, if any.
    private func currentKeys(forceRefresh: Bool) async throws -> JWTKeyCollection {
        let time = now()
        if let keys, settings.keySet == nil || (!forceRefresh && time - loadedAt < refreshInterval) { return keys }
        let collection = JWTKeyCollection()
        // HS256 wants a key at least as long as its digest; jwt-kit stops the process on a shorter one, so such a
        // secret (the configuration refuses it at start-up) verifies nothing here.
        if let secret = settings.secret, secret.utf8.count >= 32 {
            await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        }
        if let source = settings.keySet {
            do {
                try await collection.add(jwksJSON: try await loadKeySet(source))
            } catch {
                // The source's name may be a URL with a token in it: only that it failed is logged.
                logger.warning("the person assertion keys (PERSON_ASSERTION_JWKS) could not be loaded",
                               metadata: ["error": "\(type(of: error))"])
                if let keys {
                    loadedAt = time
                    return keys
                }
                throw AssertionRefusal(.invalidAssertion, "the keys to verify assertions could not be loaded")
            }
        }
        keys = collection
        loadedAt = time
        return collection
    }

    /// The refusal a failure of jwt-kit's verification becomes: the reason, never the token.
    private static func refusal(for error: any Error) -> any Error {
        if error is AssertionRefusal { return error }
        guard let error = error as? JWTError else {
            return AssertionRefusal(.invalidAssertion, "the assertion's claims are malformed")
        }
        switch error.errorType {
        case .signatureVerificationFailed:
            return AssertionRefusal(.invalidAssertion, "the assertion's signature does not verify")
        case .unknownKID, .missingKIDHeader, .noKeyProvided:
            return AssertionRefusal(.invalidAssertion, "the assertion's key (kid) is not among the configured keys")
        case .malformedToken:
            return AssertionRefusal(.invalidAssertion, "the assertion is not a well-formed JWT")
        case .unsupportedAlgorithm, .signingAlgorithmFailure:
            return AssertionRefusal(.invalidAssertion, "the assertion's algorithm (alg) is not the configured keys'")
        default:
            return AssertionRefusal(.invalidAssertion, "the assertion does not verify")
        }
    }
}

/// The claims of an assertion the verifier reads: `iss`, `aud` (a string or an array), `exp`, `iat` and `nbf` (Unix
/// seconds, kept in ms), and every claim whose value is a string (the person claim is one of them). Checked by the
/// verifier against its clock, so `verify(using:)` checks nothing.
struct PersonClaims: JWTPayload {
    var issuer: String?
    var audience: [String]?
    var expiresAt: Int64?
    var issuedAt: Int64?
    /// `nbf`: not to be accepted before this (Unix ms), when the issuer says.
    var notBefore: Int64?
    var strings: [String: String]

    /// Any claim name.
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var strings: [String: String] = [:]
        for key in container.allKeys {
            if let value = try? container.decode(String.self, forKey: key) { strings[key.stringValue] = value }
        }
        self.strings = strings
        issuer = strings["iss"]
        if let single = strings["aud"] {
            audience = [single]
        } else {
            audience = try? container.decodeIfPresent([String].self, forKey: Key(stringValue: "aud"))
        }
        expiresAt = Self.milliseconds(container, "exp")
        issuedAt = Self.milliseconds(container, "iat")
        notBefore = Self.milliseconds(container, "nbf")
    }

    /// A NumericDate claim (Unix seconds, perhaps with a fraction) in Unix ms; nil when absent or not a number.
    private static func milliseconds(_ container: KeyedDecodingContainer<Key>, _ name: String) -> Int64? {
        guard let seconds = try? container.decode(Double.self, forKey: Key(stringValue: name)), seconds.isFinite,
              abs(seconds) < 1e12 else { return nil }
        return Int64((seconds * 1000).rounded(.down))
    }

    /// Written back as strings only: the hub never signs one.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in strings { try container.encode(value, forKey: Key(stringValue: name)) }
    }

    /// The checks are the verifier's (`PersonAssertionVerifier.check`), against its injected clock.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
