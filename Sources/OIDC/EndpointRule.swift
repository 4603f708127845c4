import Curl
import Foundation

/// Which provider URLs the hub sends to: the token endpoint (it receives the code, the verifier and the client
/// secret) and the JWKS (the keys every sign-in trusts) only over TLS, plain `http://` only to this machine (the
/// tests' provider). The authorization and end-session endpoints are the browser's, but are held to the same rule.
public enum EndpointRule {
    /// Refuses `url` unless it is `https://` with a host, or `http://` to a loopback host.
    /// - Parameter name: the endpoint's name in the discovery document, for the message.
    /// - Throws: `OIDCError` `.misconfigured` (not an http(s) URL), `.insecureEndpoint` (plain HTTP off loopback).
    public static func check(_ url: String, name: String) throws {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(),
            let host = parts.host, !host.isEmpty, scheme == "https" || scheme == "http"
        else {
            throw OIDCError(.misconfigured, "the provider's \(name) is not an http(s) URL")
        }
        guard scheme == "http", !LoopbackHost.contains(host) else { return }
        throw OIDCError(
            .insecureEndpoint,
            "the provider's \(name) is plain http:// to another machine; the hub sends secrets there over TLS only")
    }
}
