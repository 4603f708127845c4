@testable import HubCore
@testable import HubServer
import Testing

/// TRUSTED_PROXIES read into the hub's configuration (the addresses themselves: HubCoreTests' ClientAddressTests).
@Suite struct TrustedProxiesVariableTests {
    @Test func aBadTrustedProxiesValueStopsTheHubNamingTheVariable() throws {
        let configuration = try HubConfiguration.fromEnvironment(["TRUSTED_PROXIES": "127.0.0.1/32, ::1/128,"])
        #expect(configuration.trustedProxies.ranges.map(\.description) == ["127.0.0.1/32", "::1/128"])
        #expect(try HubConfiguration.fromEnvironment([:]).trustedProxies.ranges.isEmpty)
        let error = #expect(throws: ConfigurationError.self) {
            try HubConfiguration.fromEnvironment(["TRUSTED_PROXIES": "10.0.0.0/8, 10.0.0.300/32"])
        }
        #expect(error?.description.contains("TRUSTED_PROXIES") == true)
        #expect(error?.description.contains("10.0.0.300/32") == true)
    }
}
