#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The IP address of whoever sent a request, as the throttles (logins, device registrations) count it: the
/// TCP peer, or the client a trusted proxy names (`TrustedProxies`). An IPv4 address counts alone; an IPv6 one
/// against its /64 (`throttleKey`) and its /48 (`siteThrottleKey`, with a higher limit).
public struct ClientAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address in network order: 4 bytes for IPv4, 16 for IPv6 (an IPv4-mapped IPv6 address is kept as IPv4,
    /// so a dual-stack listener's `::ffff:127.0.0.1` is `127.0.0.1`).
    public let bytes: [UInt8]

    /// Parses `1.2.3.4`, `2001:db8::1` or `[2001:db8::1]`; nil for anything else (a zone `%eth0` or a port included).
    public init?(_ text: some StringProtocol) {
        var text = String(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        if let bytes = Self.parse(text, family: AF_INET, size: 4) {
            self.bytes = bytes
        } else if let bytes = Self.parse(text, family: AF_INET6, size: 16) {
            self.bytes = bytes.starts(with: Self.mappedPrefix) ? Array(bytes[12...]) : bytes
        } else {
            return nil
        }
    }

    /// An address of these 4 or 16 bytes.
    init(bytes: [UInt8]) {
        precondition(bytes.count == 4 || bytes.count == 16, "an IP address has 4 or 16 bytes")
        self.bytes = bytes.count == 16 && bytes.starts(with: Self.mappedPrefix) ? Array(bytes[12...]) : bytes
    }

    /// Whether this is an IPv6 address (not an IPv4-mapped one).
    public var isIPv6: Bool { bytes.count == 16 }

    /// The key the throttles count under: an IPv4 address itself; an IPv6 address's /64, which one subscriber
    /// usually holds whole (`2001:db8:1:2::/64`), so rotating through it buys no fresh budget.
    public var throttleKey: String {
        guard isIPv6 else { return description }
        return Self.format(Array(bytes[..<8]) + Array(repeating: 0, count: 8)) + "/64"
    }

    /// The wider key an IPv6 client counts under as well: its /48 (`2001:db8:1::/48`), the prefix a site or a
    /// subscriber is usually given whole, which holds 65,536 /64s: rotating through them buys no fresh budget either.
    /// Its limit is `siteLimitFactor` times the per-address one (a site's several networks share it). Nil for IPv4,
    /// which counts per address alone.
    public var siteThrottleKey: String? {
        guard isIPv6 else { return nil }
        return Self.format(Array(bytes[..<6]) + Array(repeating: 0, count: 10)) + "/48"
    }

    /// How many times the per-address limit of a throttle (logins, device registrations) an IPv6 /48 may use, all
    /// its addresses together.
    public static let siteLimitFactor = 4

    /// The usual text form (`192.0.2.1`, `2001:db8::1`).
    public var description: String { Self.format(bytes) }

    /// `::ffff:0:0/96`, the IPv4-mapped addresses.
    private static let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xff, 0xff]

    private static func parse(_ text: String, family: Int32, size: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: size)
        let parsed = buffer.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return parsed == 1 ? buffer : nil
    }

    private static func format(_ bytes: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        precondition(written != nil, "inet_ntop formats every 4- or 16-byte address")
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
