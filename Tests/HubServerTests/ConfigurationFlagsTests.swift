import HubServer
import Testing

/// Every variable of the configuration is also a flag of `msi-hub serve` (secrets excepted).
@Suite struct ConfigurationFlagsTests {
    @Test func aFlagSetsItsVariableOverTheEnvironment() throws {
        let environment = try HubConfiguration.environment(
            ["TRUSTED_PROXIES": "10.0.0.0/8", "PORT": "9000"],
            flags: ["--trusted-proxies", "192.168.0.0/16", "--http-max-connections=12"])
        #expect(environment["TRUSTED_PROXIES"] == "192.168.0.0/16")
        #expect(environment["HTTP_MAX_CONNECTIONS"] == "12")
        #expect(environment["PORT"] == "9000")
        let configuration = try HubConfiguration.fromEnvironment(environment)
        #expect(configuration.connections.maxConnections == 12)
    }

    @Test func unknownFlagsSecretsAndMissingValuesAreRefused() {
        for flags in [
            ["--no-such-setting", "1"], ["--metrics-token", "abc"], ["--device-registration-key=k"],
            ["--trusted-proxies"], ["--trusted-proxies", "--port", "1"], ["stray"],
        ] {
            #expect(throws: ConfigurationError.self, "\(flags)") {
                try HubConfiguration.environment([:], flags: flags)
            }
        }
    }

    @Test func aBadValueGivenAsAFlagNamesItsVariable() throws {
        let environment = try HubConfiguration.environment([:], flags: ["--http-idle-timeout-seconds", "soon"])
        let error = try #require(throws: ConfigurationError.self) { try HubConfiguration.fromEnvironment(environment) }
        #expect(error.description.contains("HTTP_IDLE_TIMEOUT_SECONDS"))
    }
}
