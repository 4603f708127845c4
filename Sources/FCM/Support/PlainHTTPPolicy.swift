import Curl
import Foundation

/// Where the FCM client may speak plain HTTP: a URL that carries an access token (`FCM_ENDPOINT`) or a signed
/// assertion (the service account's `token_uri`) must be `https://`, unless it points at this machine (a loopback
/// address, as the tests' fake FCM) or the operator says the network is trusted (`FCM_ALLOW_INSECURE=true`).
/// Over plain HTTP anyone on the path reads the bearer token and may send as the school for its lifetime.
struct PlainHTTPPolicy: Sendable {
    /// Whether plain HTTP to other machines is allowed (`FCM_ALLOW_INSECURE`).
    var allowInsecure: Bool

    /// The policy `FCM_ALLOW_INSECURE` describes (empty or absent: false).
    /// - Throws: `RelayConfigurationError` when the value is neither true nor false.
    init(environment: [String: String]) throws(RelayConfigurationError) {
        allowInsecure = try flag("FCM_ALLOW_INSECURE", in: environment)
    }

    /// Refuses `url` unless it is https, or plain http to a loopback host, or plain http allowed.
    /// - Parameter source: what names the URL for the operator, e.g. `FCM_ENDPOINT`.
    /// - Throws: `RelayConfigurationError` naming `source` and `FCM_ALLOW_INSECURE`.
    func check(_ url: String, source: String) throws(RelayConfigurationError) {
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(),
            let host = parsed.host, !host.isEmpty, scheme == "https" || scheme == "http"
        else {
            throw RelayConfigurationError(message: "\(source) must be an http(s) URL with a host, not \"\(url)\"")
        }
        guard scheme == "http", !allowInsecure, !Self.isLoopback(host: host) else { return }
        throw RelayConfigurationError(
            message: "\(source) \"\(url)\" is plain HTTP to another machine, so access tokens would cross the network "
                + "in clear text: use https, a loopback address, or set FCM_ALLOW_INSECURE=true on a trusted network")
    }

    /// Whether `host` is this machine (`LoopbackHost`).
    static func isLoopback(host: String) -> Bool { LoopbackHost.contains(host) }
}
