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
        let header = try AssertionHeader(assertion)
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
    private func verifiedClaims(_ assertion: String, header: AssertionHeader) async throws -> PersonClaims {
        var keys = try await currentKeys()
        // A kid the keys lack is most likely the provider's new key: load them again before trying the others.
        if settings.keySet != nil, keys.lacks(header.kid), mayReload {
            keys = try await reload()
        }
        do {
            return try await keys.verify(assertion, header: header)
        } catch let error as JWTError where Self.mayBeNewKey(error) && settings.keySet != nil && mayReload {
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

/// The keys in use: jwt-kit's collection, and the one algorithm each of its keys verifies, fixed when the key was
/// added (jwt-kit would take a JWKS key's algorithm from the first token naming it when the key has no `alg`).
struct KeyRing: Sendable {
    let collection: JWTKeyCollection
    /// The algorithm of each key, by kid.
    let algorithms: [String: String]
    /// The algorithm of the key jwt-kit verifies a token with when the token names no kid it holds: the first added.
    let defaultAlgorithm: String?

    /// The secret (HS256) and the JWKS's keys, each pinned to its algorithm (`pinnedAlgorithm`); a key that cannot be
    /// pinned, or has no kid, is left out and logged (by kid only).
    /// - Throws: when the JWKS is not one.
    static func make(secret: String?, jwks: String?, logger: Logger) async throws -> KeyRing {
        let collection = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        var defaultAlgorithm: String?
        // HS256 wants a key at least as long as its digest; jwt-kit stops the process on a shorter one, so such a
        // secret (the configuration refuses it at start-up) verifies nothing here.
        if let secret, secret.utf8.count >= 32 {
            await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            defaultAlgorithm = "HS256"
        }
        if let jwks {
            for var key in try JSONDecoder().decode(JWKS.self, from: Data(jwks.utf8)).keys {
                guard let kid = key.keyIdentifier?.string, let algorithm = pinnedAlgorithm(of: key) else {
                    logger.warning(
                        "a person assertion key without a kid, or of a type and algorithm the hub does not verify, is left out",
                        metadata: ["kid": "\(key.keyIdentifier?.string ?? "none")"])
                    continue
                }
                key.algorithm = algorithm
                try await collection.add(jwk: key)
                algorithms[kid] = algorithm.rawValue
                if defaultAlgorithm == nil { defaultAlgorithm = algorithm.rawValue }
            }
        }
        return KeyRing(collection: collection, algorithms: algorithms, defaultAlgorithm: defaultAlgorithm)
    }

    /// The one algorithm a JWKS key verifies: its `alg` when it names a signature algorithm of its key type (and,
    /// for EC, its curve); without `alg`, RS256 for RSA and ES256 for EC P-256; nil for anything else.
    static func pinnedAlgorithm(of key: JWK) -> JWK.Algorithm? {
        switch key.keyType {
        case .rsa:
            guard let algorithm = key.algorithm else { return .rs256 }
            return [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512].contains(algorithm) ? algorithm : nil
        case .ecdsa:
            let byCurve: [(JWK.Curve, JWK.Algorithm)] = [
                (.ecdsa(.p256), .es256), (.ecdsa(.p384), .es384),
                (.ecdsa(.p521), .es512),
            ]
            guard let curve = key.curve, let expected = byCurve.first(where: { $0.0 == curve })?.1 else { return nil }
            guard let algorithm = key.algorithm else { return expected == .es256 ? .es256 : nil }
            return algorithm == expected ? algorithm : nil
        case .octetKeyPair:
            return key.algorithm == .eddsa ? .eddsa : nil
        default:
            return nil
        }
    }

    /// Whether a token naming `kid` names a key this ring does not hold.
    func lacks(_ kid: String?) -> Bool {
        kid.map { algorithms[$0] == nil } ?? false
    }

    /// The claims of `assertion`, once its header's `alg` is its key's and its signature verifies.
    /// - Throws: `AssertionRefusal` for another `alg`; `JWTError` from jwt-kit.
    func verify(_ assertion: String, header: AssertionHeader) async throws -> PersonClaims {
        guard let expected = header.kid.flatMap({ algorithms[$0] }) ?? defaultAlgorithm else {
            throw JWTError.noKeyProvided
        }
        guard header.algorithm == expected else {
            throw AssertionRefusal(.invalidAssertion, "the assertion's algorithm (alg) is not the one its key verifies")
        }
        return try await collection.verify(assertion, as: PersonClaims.self)
    }
}

/// The header of an assertion, read before anything is verified: its `alg`, its `kid`, and its signed part.
struct AssertionHeader: Sendable {
    let algorithm: String
    let kid: String?
    /// The header and claims as sent (`header.claims`): what the signature covers.
    let signedPart: Substring

    /// - Throws: `AssertionRefusal.invalidAssertion` when the token is not three parts with a JSON header naming an
    ///   `alg`.
    init(_ token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Self.base64URLDecoded(parts[0]),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let algorithm = object["alg"] as? String
        else {
            throw AssertionRefusal(.invalidAssertion, "the assertion is not a well-formed JWT")
        }
        self.algorithm = algorithm
        self.kid = object["kid"] as? String
        self.signedPart = token[parts[0].startIndex..<parts[1].endIndex]
    }

    private static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
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
            abs(seconds) < 1e12
        else { return nil }
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
