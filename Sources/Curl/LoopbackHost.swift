import Foundation

/// Which hosts are this machine, where plain `http://` carries no secret across a network: the one test every
/// caller that allows plain HTTP only to loopback asks (FCM's endpoints, the OpenID provider's in tests).
public enum LoopbackHost {
    /// Whether `host` is this machine: `localhost`, an address in 127.0.0.0/8, or `::1` (brackets allowed).
    public static func contains(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name = String(name.dropLast()) }
        if name == "localhost" { return true }
        var ipv4 = in_addr()
        if inet_pton(AF_INET, name, &ipv4) == 1 {
            return UInt32(bigEndian: ipv4.s_addr) >> 24 == 127
        }
        var ipv6 = in6_addr()
        if inet_pton(AF_INET6, name, &ipv6) == 1 {
            return withUnsafeBytes(of: &ipv6) { Array($0) } == Array(repeating: 0, count: 15) + [1]
        }
        return false
    }
}
