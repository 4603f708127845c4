import Foundation
import HubTime
import JWTKit
import Logging
import NIOPosix
import SignedTokens

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
    /// Whether an assertion must carry the `nonce` the hub gave the device binding with
    /// (`PERSON_ASSERTION_NONCE=required`); off, a `nonce` claim is not looked at.
    public var nonceRequired: Bool

    public init(
        secret: String? = nil, keySet: KeySetSource? = nil, issuer: String = "", audience: String = "",
        claim: String = "sub", nonceRequired: Bool = false
    ) {
        self.secret = secret
        self.keySet = keySet
        self.issuer = issuer
        self.audience = audience
        self.claim = claim
        self.nonceRequired = nonceRequired
    }

    /// Whether a device may be bound at all: a secret or a key set is given.
    public var isConfigured: Bool { secret != nil || keySet != nil }
}

/// A verified assertion, as far as the hub keeps anything of it.
public struct VerifiedAssertion: Sendable {
    /// The person it names.
    public var person: String
    /// What identifies this assertion among all others (a hash of its `jti`, or of its signed part when it has
    /// none), remembered until `expiresAt` so that it binds once.
    public var replayKey: String
    /// Its `exp`, in Unix ms.
    public var expiresAt: Int64
    /// Its `nonce` claim, if any.
    public var nonce: String?
}

/// The one place a person assertion (a JWT from the school's sign-in) is verified, with vapor/jwt-kit: its
/// signature (HS256 with the secret, RS256/ES256 with the JWKS's keys), `iss`, `aud`, `exp` in the future and `iat`
/// at most ten minutes old. Returns the person id it names, and what makes it single-use, and nothing else of it.
///
/// Each key verifies one algorithm, fixed when the key is added and never taken from a token: the secret HS256; a
/// JWKS key its `alg`, or without one RS256 for an RSA key and ES256 for an EC P-256 key (any other key without
/// `alg` is left out). A token whose header names another `alg` than its key's is refused.
///
/// A JWKS is cached: loaded on first use, again when older than `refreshInterval`, and when an assertion names a
/// `kid` it does not hold or its signature does not verify (at most every `unknownKeyInterval`, so bad assertions
/// cannot make it fetch on every request). However many verifications want a load at once, one runs, and they all
/// wait for it.
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
    private var keys: KeyRing?
    private var loadedAt: Int64 = 0
    /// The load under way, which every verification that wants one waits for instead of starting its own.
    private var loading: Task<Void, Never>?

    /// - Parameters:
    ///   - loadKeySet: reads the JWKS; `fileLoader` reads files, and is enough where no URL is configured.
    ///   - refreshInterval: how long a loaded JWKS is used before it is loaded again.
    ///   - unknownKeyInterval: how soon after a load an unknown `kid` may make it load again.
    public init(
        settings: PersonAssertionSettings, loadKeySet: @escaping KeySetLoader = PersonAssertionVerifier.fileLoader,
        now: @escaping UnixClock = UnixTime.nowMilliseconds, logger: Logger = Logger(label: "msi-hub"),
        refreshInterval: Duration = .seconds(300), unknownKeyInterval: Duration = .seconds(30)
    ) {
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

    /// Whether an assertion must carry the device's nonce (`PERSON_ASSERTION_NONCE=required`).
    public nonisolated var nonceRequired: Bool { settings.nonceRequired }

    /// The person id `assertion` names, once it verifies.
    /// - Throws: `AssertionRefusal` (`.notConfigured`; `.invalidAssertion` with the reason, never the token).
    public func person(in assertion: String) async throws -> String {
        try await verify(assertion).person
    }

    /// What the hub keeps of `assertion` once it verifies: the person, and what makes it single-use.
    /// - Throws: `AssertionRefusal` (`.notConfigured`; `.invalidAssertion` with the reason, never the token).
    public func verify(_ assertion: String) async throws -> VerifiedAssertion {
        guard settings.isConfigured else {
            throw AssertionRefusal(.notConfigured, "person binding is not configured")
        }
        guard (1...Self.maximumLength).contains(assertion.utf8.count) else {
            throw AssertionRefusal(
                .invalidAssertion, "the assertion must be a JWT of at most \(Self.maximumLength) bytes")
        }
        let header: TokenHeader
        do {
            header = try TokenHeader(assertion)
        } catch {
            throw Self.refusal(for: error)
        }
        let claims = try await verifiedClaims(assertion, header: header)
        let person = try check(claims)
        // Not the signature: ECDSA lets anyone who holds a signature make another valid one of the same claims.
        let replayKey =
            claims.strings["jti"].map { Secret.hash("jti:" + $0) } ?? Secret.hash("signed:" + header.signedPart)
        return VerifiedAssertion(
            person: person, replayKey: replayKey, expiresAt: claims.expiresAt ?? now(),
            nonce: claims.strings["nonce"])
    }

    /// The claims of `assertion` once its signature verifies, loading the JWKS again once for an unknown `kid`.
    private func verifiedClaims(_ assertion: String, header: TokenHeader) async throws -> TokenClaims {
        var keys = try await currentKeys()
        // A kid the keys lack is most likely the provider's new key: load them again before trying the others.
        if settings.keySet != nil, keys.lacks(header.kid), mayReload {
            keys = try await reload()
        }
        do {
            return try await keys.verify(assertion, header: header)
        } catch  where Self.mayBeNewKey(error) && settings.keySet != nil && mayReload {
            keys = try await reload()
            do {
                return try await keys.verify(assertion, header: header)
            } catch {
                throw Self.refusal(for: error)
            }
        } catch {
            throw Self.refusal(for: error)
        }
    }

    /// Whether a failed verification may load the JWKS again now.
    private var mayReload: Bool { now() - loadedAt >= unknownKeyInterval }

    /// Whether the provider may have a key the JWKS loaded lacks: jwt-kit verifies a token whose `kid` it does not
    /// hold with its default key, so a rotated key shows as a signature that does not verify.
    private static func mayBeNewKey(_ error: any Error) -> Bool {
        if let error = error as? SignedTokenError { return error.code == .noKey }
        guard let error = error as? JWTError else { return false }
        return [.unknownKID, .signatureVerificationFailed, .noKeyProvided].contains(error.errorType)
    }

    /// The iss, aud, exp, iat, nbf (when given) and person checks, against the injected clock.
    private func check(_ claims: TokenClaims) throws -> String {
        let now = self.now()
        guard claims.issuer == settings.issuer else {
            throw AssertionRefusal(.invalidAssertion, "the assertion's issuer (iss) is not the configured one")
        }
        guard let audience = claims.audience, audience.contains(settings.audience) else {
            throw AssertionRefusal(
                .invalidAssertion, "the assertion's audience (aud) does not include the configured one")
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
            throw AssertionRefusal(
                .invalidAssertion,
                "the assertion's \(settings.claim) claim must be 1 to \(Self.maximumPersonLength) characters")
        }
        return person
    }

    /// The keys to verify with: the secret and the JWKS, the JWKS loaded again when due.
    private func currentKeys() async throws -> KeyRing {
        if let keys, settings.keySet == nil || now() - loadedAt < refreshInterval { return keys }
        return try await reload()
    }

    /// The keys after a load: the one under way if there is one, else a new one. A JWKS that fails to load keeps the
    /// previous keys, if any.
    private func reload() async throws -> KeyRing {
        if let loading {
            await loading.value
        } else {
            let task = Task { await self.load() }
            loading = task
            await task.value
        }
        guard let keys else {
            throw AssertionRefusal(.invalidAssertion, "the keys to verify assertions could not be loaded")
        }
        return keys
    }

    /// Loads the keys and stores them before the task ends, so that every caller waiting for it finds them.
    private func load() async {
        let time = now()
        do {
            var jwks: String?
            if let source = settings.keySet { jwks = try await loadKeySet(source) }
            keys = try await KeyRing.make(secret: settings.secret, jwks: jwks, logger: logger)
        } catch {
            // The source's name may be a URL with a token in it: only that it failed is logged.
            logger.warning(
                "the person assertion keys (PERSON_ASSERTION_JWKS) could not be loaded",
                metadata: ["error": "\(type(of: error))"])
        }
        loadedAt = time
        loading = nil
    }

    /// The refusal a failure of jwt-kit's verification becomes: the reason, never the token.
    private static func refusal(for error: any Error) -> any Error {
        if error is AssertionRefusal { return error }
        if let error = error as? SignedTokenError {
            switch error.code {
            case .malformed: return AssertionRefusal(.invalidAssertion, "the assertion is not a well-formed JWT")
            case .algorithmMismatch:
                return AssertionRefusal(
                    .invalidAssertion, "the assertion's algorithm (alg) is not the one its key verifies")
            default:
                return AssertionRefusal(
                    .invalidAssertion, "the assertion's key (kid) is not among the configured keys")
            }
        }
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
