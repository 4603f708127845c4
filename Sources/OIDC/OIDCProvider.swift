import Foundation
import HubTime
import JWTKit
import Logging
import SignedTokens

/// One OpenID provider as the hub's portal uses it: the discovery document and the JWKS, each fetched once and
/// shared by every sign-in (however many want them at once, one fetch runs and they all wait for it), refreshed
/// after `refreshInterval`, the JWKS again when an id_token names a `kid` it lacks (at most every
/// `unknownKeyInterval`); the authorization URL of a new sign-in; the code redeemed and the id_token verified.
public actor OIDCProvider {
    public nonisolated let settings: OIDCSettings
    private let transport: any OIDCTransport
    private let now: UnixClock
    private let logger: Logger
    private let refreshInterval: Int64
    private let unknownKeyInterval: Int64

    private var metadata: ProviderMetadata?
    private var metadataLoadedAt: Int64 = 0
    private var keys: KeyRing?
    private var keysLoadedAt: Int64 = 0
    /// The load under way, which every caller that wants one waits for.
    private var loading: Task<Void, Never>?
    /// The last load's failure, for the callers that waited for it.
    private var loadFailure: OIDCError?
    /// When the last load failed (nil after a success): for `unknownKeyInterval` after it no load starts again, so
    /// while the provider is down or slow each sign-in uses what is held (or is refused at once) instead of waiting
    /// for another failing fetch.
    private var failedAt: Int64?

    public init(
        settings: OIDCSettings, transport: any OIDCTransport, now: @escaping UnixClock = UnixTime.nowMilliseconds,
        logger: Logger = Logger(label: "msi-hub"), refreshInterval: Duration = .seconds(3600),
        unknownKeyInterval: Duration = .seconds(30)
    ) {
        self.settings = settings
        self.transport = transport
        self.now = now
        self.logger = logger
        self.refreshInterval = refreshInterval.milliseconds
        self.unknownKeyInterval = unknownKeyInterval.milliseconds
    }

    /// The discovery document, loaded when missing or older than the refresh interval (a failed refresh keeps the
    /// one held).
    /// - Throws: `OIDCError` (`.unavailable`, `.misconfigured`, `.insecureEndpoint`) when none can be had.
    public func currentMetadata() async throws -> ProviderMetadata {
        try await current({ $0.metadata }, loadedAt: { $0.metadataLoadedAt }, or: "the provider could not be reached")
    }

    /// A new sign-in and the URL to send the browser to.
    /// - Throws: `OIDCError`, as `currentMetadata()`.
    public func begin(redirectURI: String) async throws -> (pending: PendingSignIn, url: String) {
        let metadata = try await currentMetadata()
        let pending = PendingSignIn.make()
        return (pending, pending.authorizationURL(metadata: metadata, settings: settings, redirectURI: redirectURI))
    }

    /// Redeems `code` at the token endpoint with the sign-in's verifier and verifies the id_token it answers.
    /// - Throws: `OIDCError` (`.unavailable`, `.insecureEndpoint`, `.tokenRefused`, `.invalidIDToken`, ...).
    public func finish(code: String, pending: PendingSignIn, redirectURI: String) async throws -> IDToken {
        let metadata = try await currentMetadata()
        // Checked when the document was read; again here, since nothing but this line sends the secret.
        try EndpointRule.check(metadata.tokenEndpoint, name: "token_endpoint")
        var fields = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
            ("code_verifier", pending.codeVerifier),
        ]
        var basic: (user: String, password: String)?
        if let secret = settings.clientSecret {
            if metadata.tokenEndpointAuthMethods.contains("client_secret_basic") {
                // RFC 6749 2.3.1: the id and secret are form-encoded before they go into Basic.
                basic = (FormEncoding.encode(settings.clientID), FormEncoding.encode(secret))
            } else {
                fields += [("client_id", settings.clientID), ("client_secret", secret)]
            }
        } else {
            fields.append(("client_id", settings.clientID))
        }
        let response: (status: Int, body: [UInt8])
        do {
            response = try await transport.postForm(metadata.tokenEndpoint, fields: fields, basicCredentials: basic)
        } catch {
            throw OIDCError(.unavailable, "the provider's token endpoint could not be reached")
        }
        if response.status >= 500 {
            throw OIDCError(.unavailable, "the provider's token endpoint answered \(response.status)")
        }
        let answer = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        guard response.status == 200, let idToken = answer?["id_token"] as? String else {
            let reason = (answer?["error"] as? String).map(Self.printable) ?? "status \(response.status)"
            throw OIDCError(.tokenRefused, "the provider refused the sign-in's code (\(reason))")
        }
        return try await verify(idToken, nonce: pending.nonce)
    }

    /// Where to send the browser to sign out at the provider too, when it offers RP-initiated logout.
    public func endSessionURL(idTokenHint: String?, postLogoutRedirectURI: String) async -> String? {
        guard let endpoint = (try? await currentMetadata())?.endSessionEndpoint else { return nil }
        var fields = [("client_id", settings.clientID), ("post_logout_redirect_uri", postLogoutRedirectURI)]
        if let idTokenHint { fields.append(("id_token_hint", idTokenHint)) }
        return endpoint + (endpoint.contains("?") ? "&" : "?")
            + String(decoding: FormEncoding.body(fields), as: UTF8.self)
    }

    /// The id_token verified with the keys held, loaded again once when it names a kid they lack or its signature
    /// fails with them (the provider's keys rotate).
    private func verify(_ raw: String, nonce: String) async throws -> IDToken {
        let metadata = try await currentMetadata()
        var ring = try await currentKeys()
        if let kid = try? TokenHeader(raw).kid, ring.lacks(kid), mayReloadKeys {
            try await load(force: true)
            ring = try await currentKeys()
        }
        do {
            return try await IDToken.verify(
                raw, keys: ring, issuer: metadata.issuer, clientID: settings.clientID, nonce: nonce, now: now())
        } catch let error as OIDCError {
            throw error
        } catch {
            throw Self.refusal(for: error)
        }
    }

    private var mayReloadKeys: Bool { now() - keysLoadedAt >= unknownKeyInterval && !failedLately }

    /// Whether a load failed within `unknownKeyInterval`.
    private var failedLately: Bool { failedAt.map { now() - $0 < unknownKeyInterval } ?? false }

    private func currentKeys() async throws -> KeyRing {
        try await current({ $0.keys }, loadedAt: { $0.keysLoadedAt }, or: "the provider's keys could not be loaded")
    }

    /// One of the provider's documents (`held`, loaded at `loadedAt`): as held while fresh, or while a load failed
    /// lately; else after a load (a failed one keeps what was held).
    /// - Throws: the last load's `OIDCError`, or `.unavailable` (`missing`), when none is held.
    private func current<Document>(
        _ held: (isolated OIDCProvider) -> Document?, loadedAt: (isolated OIDCProvider) -> Int64, or missing: String
    ) async throws -> Document {
        if let document = held(self), now() - loadedAt(self) < refreshInterval || failedLately { return document }
        if !failedLately { try await load(force: false) }
        guard let document = held(self) else { throw loadFailure ?? OIDCError(.unavailable, missing) }
        return document
    }

    /// Loads the discovery document and the JWKS: the load under way if there is one, else a new one.
    private func load(force: Bool) async throws {
        if let loading {
            await loading.value
            return
        }
        let task = Task { await self.fetch() }
        loading = task
        await task.value
    }

    /// Fetches both documents and keeps what verifies; a failure keeps what was held and is remembered.
    private func fetch() async {
        defer { loading = nil }
        let time = now()
        do {
            let discovery = try await get(settings.discoveryURL, what: "discovery document")
            let metadata = try ProviderMetadata(json: discovery, expectedIssuer: settings.issuer)
            let jwks = try await get(metadata.jwksURI, what: "JWKS")
            let ring: KeyRing
            do {
                ring = try await KeyRing.make(secret: nil, jwks: String(decoding: jwks, as: UTF8.self), logger: logger)
            } catch {
                throw OIDCError(.misconfigured, "the provider's JWKS is not a key set")
            }
            guard !ring.isEmpty else {
                throw OIDCError(.misconfigured, "the provider's JWKS holds no key the hub can pin (kid, kty, crv)")
            }
            self.metadata = metadata
            self.keys = ring
            metadataLoadedAt = time
            keysLoadedAt = time
            loadFailure = nil
            failedAt = nil
        } catch {
            let failure = error as? OIDCError ?? OIDCError(.unavailable, "the provider could not be reached")
            loadFailure = failure
            failedAt = now()
            logger.warning("the OpenID provider's documents could not be loaded", metadata: ["error": "\(failure)"])
        }
    }

    private func get(_ url: String, what: String) async throws -> [UInt8] {
        let response: (status: Int, body: [UInt8])
        do {
            response = try await transport.get(url)
        } catch {
            throw OIDCError(.unavailable, "the provider's \(what) could not be fetched")
        }
        guard response.status == 200 else {
            throw OIDCError(
                response.status >= 500 ? .unavailable : .misconfigured,
                "the provider's \(what) answered \(response.status)")
        }
        return response.body
    }

    /// What a failed verification of jwt-kit or the key ring becomes.
    private static func refusal(for error: any Error) -> OIDCError {
        if let error = error as? SignedTokenError {
            switch error.code {
            case .algorithmMismatch:
                return OIDCError(.invalidIDToken, "the id_token's algorithm (alg) is not the one its key is pinned to")
            case .malformed: return OIDCError(.invalidIDToken, "the id_token is not a well-formed JWT")
            default: return OIDCError(.invalidIDToken, "the id_token's key (kid) is not among the provider's keys")
            }
        }
        if let error = error as? JWTError, error.errorType == .signatureVerificationFailed {
            return OIDCError(.invalidIDToken, "the id_token's signature does not verify")
        }
        return OIDCError(.invalidIDToken, "the id_token does not verify")
    }

    /// A provider's error code as it may be shown: ASCII letters, digits and `_` only, at most 64.
    public static func printable(_ text: String) -> String {
        String(
            text.unicodeScalars.filter { $0.isASCII && ($0 == "_" || CharacterSet.alphanumerics.contains($0)) }
                .prefix(64).map(Character.init))
    }
}
