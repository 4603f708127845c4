@testable import HubCore
import Testing

/// Who sent a request: the peer, or the client a trusted proxy names; IPv6 counted by /64.
@Suite struct ClientAddressTests {
    private func address(_ text: String) throws -> ClientAddress { try #require(ClientAddress(text)) }

    @Test func addressesParseInTheirUsualFormsAndNothingElse() throws {
        #expect(try address("192.0.2.1").description == "192.0.2.1")
        #expect(try address("2001:DB8:0:0::1").description == "2001:db8::1")
        #expect(try address("[2001:db8::1]").description == "2001:db8::1")
        // A dual-stack listener's IPv4 peer is the IPv4 address.
        #expect(try address("::ffff:127.0.0.1") == address("127.0.0.1"))
        for text in [
            "", "localhost", "1.2.3", "1.2.3.4:80", "256.1.1.1", "2001:db8::1%eth0", "2001:db8::g", " 1.2.3.4",
        ] {
            #expect(ClientAddress(text) == nil, "\(text)")
        }
    }

    @Test func ipv6AddressesAreThrottledByTheirSlash64() throws {
        #expect(try address("2001:db8:1:2:aaaa:bbbb:cccc:dddd").throttleKey == "2001:db8:1:2::/64")
        #expect(try address("2001:db8:1:2::9").throttleKey == address("2001:db8:1:2:ffff::1").throttleKey)
        #expect(try address("2001:db8:1:3::9").throttleKey != address("2001:db8:1:2::9").throttleKey)
        #expect(try address("203.0.113.7").throttleKey == "203.0.113.7")
        #expect(try address("2001:db8:1:2:aaaa::1").siteThrottleKey == "2001:db8:1::/48")
        #expect(try address("2001:db8:1:ffff::1").siteThrottleKey == address("2001:db8:1:2::9").siteThrottleKey)
        #expect(try address("2001:db8:2::1").siteThrottleKey != address("2001:db8:1::1").siteThrottleKey)
        #expect(try address("203.0.113.7").siteThrottleKey == nil)
        #expect(try address("::ffff:203.0.113.7").siteThrottleKey == nil)
    }

    @Test func cidrsParseAndContainTheirAddressesOnly() throws {
        let ten = try AddressRange(cidr: "10.0.0.0/8")
        #expect(ten.contains(try address("10.255.1.2")))
        #expect(!ten.contains(try address("11.0.0.1")))
        #expect(!ten.contains(try address("::ffff:b00:1")))
        let v6 = try AddressRange(cidr: " 2001:db8::/32 ")
        #expect(v6.contains(try address("2001:db8:ffff::1")))
        #expect(!v6.contains(try address("2001:db9::1")))
        #expect(try AddressRange(cidr: "192.0.2.7").description == "192.0.2.7/32")
        #expect(try AddressRange(cidr: "0.0.0.0/0").contains(try address("198.51.100.1")))
        #expect(try AddressRange(cidr: "10.0.0.0/12").contains(try address("10.15.255.255")))
        for text in ["10.0.0.0/33", "10.0.0.1/8", "10.0.0.0/", "10.0.0.0/x", "2001:db8::/129", "not-an-ip/8", "/8", ""]
        {
            #expect(throws: AddressRangeError.self, "\(text)") { try AddressRange(cidr: text) }
        }
    }

    @Test func theClientIsTheRightMostUntrustedAddressAndOnlyATrustedPeerIsBelieved() throws {
        let proxies = try TrustedProxies(parsing: "10.0.0.0/8, 2001:db8:ffff::/48")
        let proxy = try address("10.0.0.5")
        // An untrusted peer is the client, whatever its header claims.
        #expect(
            proxies.client(peer: try address("198.51.100.4"), forwardedFor: ["203.0.113.9"])
                == (try address("198.51.100.4")))
        // Behind one proxy: the address it appended; a client's own forged entries to the left do not count.
        #expect(proxies.client(peer: proxy, forwardedFor: ["1.1.1.1, 203.0.113.9"]) == (try address("203.0.113.9")))
        // Behind two proxies (one header line each): trusted hops are skipped from the right.
        #expect(
            proxies.client(peer: proxy, forwardedFor: ["1.1.1.1, 203.0.113.9", "10.1.1.1"])
                == (try address("203.0.113.9")))
        #expect(
            proxies.client(peer: proxy, forwardedFor: ["2001:db8:1:2::3, 2001:db8:ffff::1"])?.throttleKey
                == "2001:db8:1:2::/64")
        // No header, or every hop trusted: the left-most trusted address; garbage: the last hop before it.
        #expect(proxies.client(peer: proxy, forwardedFor: []) == proxy)
        #expect(proxies.client(peer: proxy, forwardedFor: ["10.9.9.9"]) == (try address("10.9.9.9")))
        #expect(proxies.client(peer: proxy, forwardedFor: ["203.0.113.9, unknown"]) == proxy)
        #expect(proxies.client(peer: nil, forwardedFor: ["203.0.113.9"]) == nil)
        // No proxies configured: nobody's header is believed.
        #expect(TrustedProxies().client(peer: proxy, forwardedFor: ["203.0.113.9"]) == proxy)
    }
}
