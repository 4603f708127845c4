import Foundation
import NIOPosix

/// Where webhook deliveries may go: the one rule against server-side request forgery, which `WebhookService` applies
/// to a URL when a webhook is created and the webhook worker applies again to the resolved addresses at each attempt
/// (the check that counts: a name may resolve elsewhere by then).
///
/// Loopback, private (RFC 1918, `fc00::/7`), link-local (`169.254.0.0/16`, `fe80::/10`), unspecified, multicast,
/// broadcast and "this network" addresses are refused unless `WEBHOOK_ALLOWED_NETWORKS` names them, and so are the
/// IPv6 addresses that stand for an IPv4 one (NAT64 `64:ff9b::/96`, 6to4 `2002::/16`): a gateway would carry them on
/// to whatever IPv4 address they embed, a private one included; plain `http://` only reaches allowed networks
/// (anywhere else it would carry the signed events in clear text).
public struct WebhookAddressPolicy: Sendable {
    /// The blocks deliveries may reach although the rule refuses them (`WEBHOOK_ALLOWED_NETWORKS`).
    public let allowed: [AddressRange]

    /// The longest URL, in bytes.
    public static let maximumURLLength = 2048

    public init(allowed: [AddressRange] = []) {
        self.allowed = allowed
    }

    /// Parses a comma-separated list of CIDRs (`127.0.0.1/32, 10.0.0.0/8`).
    /// - Throws: `AddressRangeError` for the first entry that is not a CIDR.
    public init(parsing list: String) throws {
        self.init(
            allowed: try list.split(separator: ",").map { $0.trimmingSpaces }.filter { !$0.isEmpty }
                .map { try AddressRange(cidr: $0) })
    }

    /// The blocks no delivery reaches unless allowed.
    static let forbidden: [AddressRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4", "::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8",
        "64:ff9b::/96", "2002::/16",
    ].map { try! AddressRange(cidr: $0) }  // constants, checked by the tests

    /// Whether `address` is in a block `WEBHOOK_ALLOWED_NETWORKS` names.
    public func isAllowedNetwork(_ address: ClientAddress) -> Bool {
        allowed.contains { $0.contains(address) }
    }

    /// Whether a delivery may connect to `address` over `scheme` (`http` or `https`).
    public func mayReach(_ address: ClientAddress, scheme: String) -> Bool {
        if isAllowedNetwork(address) { return true }
        return scheme == "https" && !Self.forbidden.contains { $0.contains(address) }
    }

    /// A webhook URL as the rule reads it.
    public struct Target: Sendable, Hashable {
        /// `http` or `https`.
        public let scheme: String
        /// The host as written, without brackets.
        public let host: String
        /// The port, the scheme's default when the URL names none.
        public let port: Int
        /// The host's address when the URL writes one rather than a name.
        public let literal: ClientAddress?
    }

    /// Checks `url` as far as can be known without resolving it: an absolute `http(s)` URL with a host, no user
    /// information or fragment, at most `maximumURLLength` bytes; a literal address the rule refuses, or plain `http`
    /// to a literal outside the allowed networks (or when none is allowed), is refused too.
    /// - Throws: `WebhookRefusal` `.invalidWebhook` saying why.
    public func check(_ url: String) throws(WebhookRefusal) -> Target {
        guard url.utf8.count <= Self.maximumURLLength else {
            throw WebhookRefusal(.invalidWebhook, "the url is longer than \(Self.maximumURLLength) bytes")
        }
        guard url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
            let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", var host = components.host, !host.isEmpty
        else {
            throw WebhookRefusal(.invalidWebhook, "the url must be an absolute http:// or https:// URL with a host")
        }
        guard components.user == nil, components.password == nil, components.fragment == nil else {
            throw WebhookRefusal(.invalidWebhook, "the url must not carry user information or a fragment")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else {
            throw WebhookRefusal(.invalidWebhook, "the url's port must be from 1 to 65535")
        }
        let target = Target(scheme: scheme, host: host.lowercased(), port: port, literal: ClientAddress(host))
        if let literal = target.literal, !mayReach(literal, scheme: scheme) {
            throw WebhookRefusal(
                .invalidWebhook,
                scheme == "http" && !isAllowedNetwork(literal)
                    ? "plain http:// is only allowed to networks WEBHOOK_ALLOWED_NETWORKS names"
                    : "the url's address is loopback, private, link-local or otherwise not reachable for webhooks")
        }
        if scheme == "http", target.literal == nil, allowed.isEmpty {
            throw WebhookRefusal(
                .invalidWebhook, "plain http:// is only allowed to networks WEBHOOK_ALLOWED_NETWORKS names")
        }
        return target
    }

    /// Resolves `url`'s host now (off the event loop, on NIO's blocking pool) and picks the first address the rule
    /// lets a delivery reach: the address to connect to, with no second resolution.
    /// - Throws: `WebhookRefusal`: `.invalidWebhook` for a URL `check` refuses, `.unresolved` when the name does not
    ///   resolve, `.addressRefused` when no address it resolves to may be reached.
    public func resolve(_ url: String) async throws(WebhookRefusal) -> (target: Target, address: ClientAddress) {
        let target = try check(url)
        let addresses: [ClientAddress]
        if let literal = target.literal {
            addresses = [literal]
        } else {
            do {
                addresses = try await NIOThreadPool.singleton.runIfActive { Self.lookUp(target.host) }
            } catch {
                throw WebhookRefusal(.unresolved, "the url's host could not be resolved")
            }
        }
        guard !addresses.isEmpty else { throw WebhookRefusal(.unresolved, "the url's host could not be resolved") }
        guard let address = addresses.first(where: { mayReach($0, scheme: target.scheme) }) else {
            throw WebhookRefusal(
                .addressRefused,
                target.scheme == "http"
                    ? "plain http:// reaches only networks WEBHOOK_ALLOWED_NETWORKS names"
                    : "the url's host resolves only to loopback, private, link-local or other refused addresses")
        }
        return (target, address)
    }

    /// The addresses `host` resolves to (getaddrinfo, blocking), in the resolver's order; empty when it fails.
    static func lookUp(_ host: String) -> [ClientAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [ClientAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let socket = current.pointee.ai_addr {
                switch Int32(current.pointee.ai_family) {
                case AF_INET:
                    let bytes = socket.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                    }
                    addresses.append(ClientAddress(bytes: bytes))
                case AF_INET6:
                    let bytes = socket.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                    }
                    addresses.append(ClientAddress(bytes: bytes))
                default:
                    break
                }
            }
            entry = current.pointee.ai_next
        }
        var seen = Set<ClientAddress>()
        return addresses.filter { seen.insert($0).inserted }
    }
}
