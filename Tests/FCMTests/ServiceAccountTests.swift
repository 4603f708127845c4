@testable import Curl
import _CryptoExtras
import FakeFCM
@testable import FCM
import Foundation
import Testing

@Suite("Service-account credentials")
struct ServiceAccountTests {
    @Test func aGoogleKeyFileIsRead() throws {
        let generated = try TestServiceAccount.generate(tokenURI: "http://127.0.0.1:1/token", projectID: "school-42")
        defer { generated.remove() }
        let account = try ServiceAccount(contentsOfFile: generated.path)
        #expect(account.projectID == "school-42")
        #expect(account.clientEmail == generated.clientEmail)
        #expect(account.privateKeyID == generated.privateKeyID)
        #expect(account.tokenURI == "http://127.0.0.1:1/token")
        #expect(account.privateKey.publicKey.derRepresentation == generated.publicKey.derRepresentation)
    }

    @Test func aMissingFileIsAnErrorNamingThePath() throws {
        let path = "/nonexistent/msi-relay/\(UUID().uuidString).json"
        let error = #expect(throws: CredentialsError.self) { try ServiceAccount(contentsOfFile: path) }
        #expect(error?.code == .fileNotFound)
        #expect(error?.description.contains(path) == true)
        #expect(error?.description.contains("no such file") == true)
    }

    @Test func aDirectoryIsAnUnreadableFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let error = #expect(throws: CredentialsError.self) { try ServiceAccount(contentsOfFile: directory.path) }
        #expect(error?.code == .unreadable)
        #expect(error?.description.contains(directory.path) == true)
    }

    @Test(arguments: [
        ("not json at all", "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        (
            #"{"type": "service_account", "project_id": "p", "private_key": "x", "token_uri": "https://t"}"#,
            #"has no "client_email""#
        ),
        (
            #"{"type": "service_account", "project_id": 7, "client_email": "a@b", "private_key": "x"}"#,
            #"has an invalid "project_id""#
        ),
        (#"{"type": "authorized_user", "client_id": "x"}"#, "not a service account key"),
        (
            #"{"project_id": "p", "client_email": "a@b", "private_key": "x", "token_uri": "file:///etc/passwd"}"#,
            "not an http(s) URL"
        ),
    ])
    func aMalformedFileIsAnErrorSayingWhatIsWrong(contents: String, expected: String) throws {
        let path = try write(contents)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: CredentialsError.self) { try ServiceAccount(contentsOfFile: path) }
        #expect(error?.code == .malformed)
        #expect(error?.description.contains(path) == true)
        #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
    }

    @Test func aKeyThatIsNotAnRSAPrivateKeyIsAnInvalidPrivateKey() throws {
        let json =
            #"{"type": "service_account", "project_id": "p", "client_email": "a@b", "#
            + #""private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#
        let path = try write(json)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: CredentialsError.self) { try ServiceAccount(contentsOfFile: path) }
        #expect(error?.code == .invalidPrivateKey)
        #expect(error?.description.contains("AAAA") == false)
    }

    @Test func theEnvironmentChoosesTheMode() async throws {
        try await withHTTPClient { http in
            let none = try FCMClient.fromEnvironment([:], httpClient: http)
            #expect(none.configuration.mode == .log)

            let generated = try TestServiceAccount.generate(tokenURI: "http://127.0.0.1:1/token")
            defer { generated.remove() }
            let withCredentials = try FCMClient.fromEnvironment(
                ["GOOGLE_APPLICATION_CREDENTIALS": generated.path, "FCM_ENDPOINT": "http://127.0.0.1:2/"],
                httpClient: http
            )
            #expect(withCredentials.configuration.mode == .send)
            #expect(withCredentials.sendURL == "http://127.0.0.1:2/v1/projects/msi-test/messages:send")

            #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(["FCM_MODE": "send"], httpClient: http)
            }
            #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(["FCM_MODE": "shout"], httpClient: http)
            }
            let missing = #expect(throws: CredentialsError.self) {
                try FCMClient.fromEnvironment(
                    ["GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/sa.json"], httpClient: http)
            }
            #expect(missing?.code == .fileNotFound)
        }
    }

    @Test(arguments: [
        ("localhost", true), ("LOCALHOST.", true), ("127.0.0.1", true), ("127.200.3.4", true), ("::1", true),
        ("[::1]", true), ("0:0:0:0:0:0:0:1", true), ("128.0.0.1", false), ("10.0.0.1", false), ("::2", false),
        ("::ffff:10.0.0.1", false), ("localhost.example.org", false), ("fcm.googleapis.com", false),
    ])
    func loopbackIsThisMachineOnly(host: String, expected: Bool) {
        #expect(PlainHTTPPolicy.isLoopback(host: host) == expected, "\(host)")
    }

    @Test func aPlainHTTPEndpointOnAnotherMachineIsRefusedUnlessAllowed() async throws {
        try await withHTTPClient { http in
            let refused = #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(["FCM_ENDPOINT": "http://fcm.example.org"], httpClient: http)
            }
            #expect(refused?.message.contains("FCM_ENDPOINT") == true)
            #expect(refused?.message.contains("FCM_ALLOW_INSECURE=true") == true)
            #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(["FCM_ENDPOINT": "HTTP://10.1.2.3:8080/"], httpClient: http)
            }
            #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(["FCM_ENDPOINT": "ftp://fcm.example.org"], httpClient: http)
            }
            let allowed = try FCMClient.fromEnvironment(
                ["FCM_ENDPOINT": "http://fcm.example.org", "FCM_ALLOW_INSECURE": "true"], httpClient: http)
            #expect(allowed.configuration.endpoint == "http://fcm.example.org")
            for endpoint in ["https://fcm.example.org", "http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9"] {
                let client = try FCMClient.fromEnvironment(["FCM_ENDPOINT": endpoint], httpClient: http)
                #expect(client.configuration.endpoint == endpoint)
            }
            let unclear = #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(["FCM_ALLOW_INSECURE": "maybe"], httpClient: http)
            }
            #expect(unclear?.message.contains("FCM_ALLOW_INSECURE") == true)
        }
    }

    @Test func aPlainHTTPTokenURIOnAnotherMachineIsRefusedUnlessAllowed() async throws {
        try await withHTTPClient { http in
            let remote = try TestServiceAccount.generate(tokenURI: "http://oauth.example.org/token")
            defer { remote.remove() }
            let environment = ["GOOGLE_APPLICATION_CREDENTIALS": remote.path, "FCM_ENDPOINT": "http://127.0.0.1:2"]
            let refused = #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(environment, httpClient: http)
            }
            #expect(refused?.message.contains("token_uri") == true)
            #expect(refused?.message.contains(remote.path) == true)
            var allowed = environment
            allowed["FCM_ALLOW_INSECURE"] = "true"
            #expect(try FCMClient.fromEnvironment(allowed, httpClient: http).projectID == "msi-test")

            let local = try TestServiceAccount.generate(tokenURI: "http://localhost:1/token")
            defer { local.remove() }
            let client = try FCMClient.fromEnvironment(
                ["GOOGLE_APPLICATION_CREDENTIALS": local.path, "FCM_ENDPOINT": "https://fcm.googleapis.com"],
                httpClient: http)
            #expect(client.configuration.mode == .send)
        }
    }

    private func write(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID().uuidString).json").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
