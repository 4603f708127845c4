import _CryptoExtras
import FakeFCM
import FCM
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
        (#"{"type": "service_account", "project_id": "p", "private_key": "x", "token_uri": "https://t"}"#,
         #"has no "client_email""#),
        (#"{"type": "service_account", "project_id": 7, "client_email": "a@b", "private_key": "x"}"#,
         #"has an invalid "project_id""#),
        (#"{"type": "authorized_user", "client_id": "x"}"#, "not a service account key"),
        (#"{"project_id": "p", "client_email": "a@b", "private_key": "x", "token_uri": "file:///etc/passwd"}"#,
         "not an http(s) URL"),
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
        let json = #"{"type": "service_account", "project_id": "p", "client_email": "a@b", "#
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

    private func write(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID().uuidString).json").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
