import Foundation
import JWTKit
import Logging

/// The keys a JWT is verified with: jwt-kit's collection, and the one algorithm each of its keys verifies, fixed
/// when the key was added (jwt-kit would take a JWKS key's algorithm from the first token naming it when the key has
/// no `alg`), so a token cannot choose its own algorithm.
public struct KeyRing: Sendable {
    let collection: JWTKeyCollection
    /// The algorithm of each key, by kid.
    let algorithms: [String: String]
    /// The algorithm of the key jwt-kit verifies a token with when the token names no kid it holds: the first added.
    let defaultAlgorithm: String?

    /// The secret (HS256) and the JWKS's keys, each pinned to its algorithm (`pinnedAlgorithm`); a key that cannot be
    /// pinned, or has no kid, is left out and logged (by kid only).
    /// - Throws: when the JWKS is not one.
    public static func make(secret: String?, jwks: String?, logger: Logger) async throws -> KeyRing {
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
                        "a key without a kid, or of a type and algorithm the hub does not verify, is left out",
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
    public static func pinnedAlgorithm(of key: JWK) -> JWK.Algorithm? {
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

    /// Whether this ring holds no key at all.
    public var isEmpty: Bool { defaultAlgorithm == nil }

    /// Whether a token naming `kid` names a key this ring does not hold.
    public func lacks(_ kid: String?) -> Bool {
        kid.map { algorithms[$0] == nil } ?? false
    }

    /// The claims of `token`, once its header's `alg` is its key's and its signature verifies.
    /// - Throws: `SignedTokenError` (`.noKey`, `.algorithmMismatch`); `JWTError` from jwt-kit.
    public func verify(_ token: String, header: TokenHeader) async throws -> TokenClaims {
        guard let expected = header.kid.flatMap({ algorithms[$0] }) ?? defaultAlgorithm else {
            throw SignedTokenError(.noKey)
        }
        guard header.algorithm == expected else { throw SignedTokenError(.algorithmMismatch) }
        return try await collection.verify(token, as: TokenClaims.self)
    }
}
