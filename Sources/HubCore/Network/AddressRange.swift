/// A block of IP addresses written as a CIDR (`10.0.0.0/8`, `2001:db8::/32`; a bare address is its /32 or /128).
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The first address of the block (the bits past the prefix are zero).
    public let network: ClientAddress
    /// How many leading bits every address of the block shares.
    public let prefixLength: Int

    /// Parses a CIDR.
    /// - Throws: `AddressRangeError` naming the text when it is not an address, or the prefix is out of range, or
    ///   bits are set past the prefix (`10.0.0.1/8` is a typo for something; it is refused rather than guessed).
    public init(cidr: String) throws {
        let text = cidr.trimmingSpaces
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = ClientAddress(parts[0]) else { throw AddressRangeError(text, "is not an IP address") }
        let bits = address.bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard parts[1].allSatisfy(\.isASCII), let value = Int(parts[1]), (0...bits).contains(value) else {
                throw AddressRangeError(text, "needs a prefix length from 0 to \(bits)")
            }
            length = value
        }
        guard Self.masked(address.bytes, to: length) == address.bytes else {
            throw AddressRangeError(text, "has bits set past its /\(length) prefix")
        }
        self.network = address
        self.prefixLength = length
    }

    /// Whether `address` is in the block (an IPv4 address is never in an IPv6 block, nor the other way round).
    public func contains(_ address: ClientAddress) -> Bool {
        address.bytes.count == network.bytes.count && Self.masked(address.bytes, to: prefixLength) == network.bytes
    }

    /// `network/prefixLength`.
    public var description: String { "\(network)/\(prefixLength)" }

    /// `bytes` with every bit past the first `length` cleared.
    private static func masked(_ bytes: [UInt8], to length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = max(0, min(8, length - index * 8))
            return kept == 8 ? byte : byte & ~(UInt8.max >> kept)
        }
    }
}

/// A CIDR that could not be read, with the text and what is wrong with it.
public struct AddressRangeError: Error, Sendable, CustomStringConvertible {
    /// The text as given.
    public let text: String
    /// What is wrong, as the end of a sentence ("is not an IP address").
    public let problem: String

    init(_ text: String, _ problem: String) {
        self.text = text
        self.problem = problem
    }

    public var description: String { "\"\(text)\" \(problem)" }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
