/// The proxies whose `X-Forwarded-For` names the client (`TRUSTED_PROXIES`): the one rule for who sent a request.
///
/// A request from any other peer is its peer, whatever it claims: `X-Forwarded-For` is anyone's to write. From a
/// trusted peer the header is read from the right, each trusted proxy having appended the address it saw: the
/// client is the right-most address that is not itself a trusted proxy.
public struct TrustedProxies: Sendable, Hashable {
    /// The blocks the proxies are in; empty: no proxy is trusted.
    public let ranges: [AddressRange]

    public init(_ ranges: [AddressRange] = []) {
        self.ranges = ranges
    }

    /// Parses a comma-separated list of CIDRs (`10.0.0.0/8, 2001:db8::/32`); an empty list trusts no one.
    /// - Throws: `AddressRangeError` for the first entry that is not a CIDR.
    public init(parsing list: String) throws {
        self.init(
            try list.split(separator: ",").map { $0.trimmingSpaces }.filter { !$0.isEmpty }
                .map { try AddressRange(cidr: $0) })
    }

    /// Whether `address` is one of the trusted proxies.
    public func trusts(_ address: ClientAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The client of a request from `peer` carrying the `X-Forwarded-For` values `forwardedFor` (every header
    /// line, in order): `peer` unless it is trusted; else the right-most listed address that is not trusted,
    /// the left-most one when all are, or the last trusted hop when the next entry is not an address (a
    /// proxy passed on what it could not read: the hop is all that is known).
    public func client(peer: ClientAddress?, forwardedFor: [String]) -> ClientAddress? {
        guard var client = peer, trusts(client) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }
        for hop in hops.reversed() {
            guard let address = ClientAddress(hop.trimmingSpaces) else { return client }
            client = address
            if !trusts(address) { return address }
        }
        return client
    }
}
