import Foundation
import _CryptoExtras

/// A service account made for one test: a fresh RSA 2048 key and its Google-style JSON key file in a temp
/// directory. Nothing secret is ever committed; `remove()` deletes the file.
public struct TestServiceAccount: Sendable {
    /// `project_id`.
    public var projectID: String
    /// `client_email`.
    public var clientEmail: String
    /// `private_key_id`.
    public var privateKeyID: String
    /// `token_uri`.
    public var tokenURI: String
    /// The key that signs the account's assertions.
    public var privateKey: _RSA.Signing.PrivateKey
    /// Where the JSON key file was written.
    public var path: String

    /// The public half, for the fake to verify assertions with.
    public var publicKey: _RSA.Signing.PublicKey { privateKey.publicKey }

    /// The key file's contents, as Google writes them (PKCS#8 PEM `private_key`).
    public var json: Data {
        let object: [String: String] = [
            "type": "service_account",
            "project_id": projectID,
            "private_key_id": privateKeyID,
            "private_key": privateKey.pkcs8PEMRepresentation + "\n",
            "client_email": clientEmail,
            "client_id": "100000000000000000000",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": tokenURI,
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }

    /// Writes the key file (mode 0600) of a new account to a new temp directory. Accounts share one RSA 2048 key made
    /// once per test process (making keys is slow in debug builds and many tests run at once), unless
    /// `privateKey` is given; the fake trusts a key per client e-mail, and `forged()` makes a key of its own.
    /// - Throws: when the key cannot be made or the file written.
    public static func generate(
        tokenURI: String,
        projectID: String = "msi-test",
        clientEmail: String = "relay@msi-test.iam.gserviceaccount.com",
        privateKey: _RSA.Signing.PrivateKey? = nil
    ) throws -> TestServiceAccount {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("msi-relay-\(UUID().uuidString.lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let account = TestServiceAccount(
            projectID: projectID,
            clientEmail: clientEmail,
            privateKeyID: UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
            tokenURI: tokenURI,
            privateKey: try privateKey ?? sharedTestKey ?? _RSA.Signing.PrivateKey(keySize: .bits2048),
            path: directory.appendingPathComponent("service-account.json").path
        )
        try account.write()
        return account
    }

    /// The same account with a new key of its own: what a forger who knows the e-mail address could sign with.
    /// - Throws: when the key cannot be made or the file written.
    public func forged() throws -> TestServiceAccount {
        try Self.generate(
            tokenURI: tokenURI, projectID: projectID, clientEmail: clientEmail,
            privateKey: _RSA.Signing.PrivateKey(keySize: .bits2048)
        )
    }

    /// Writes `json` to `path`, readable by the owner only.
    /// - Throws: when the file cannot be written.
    public func write() throws {
        try json.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    /// Deletes the key file and its directory.
    public func remove() {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The RSA key test accounts share, made on first use (a global `let` is initialised once, thread-safely).
private let sharedTestKey: _RSA.Signing.PrivateKey? = try? _RSA.Signing.PrivateKey(keySize: .bits2048)
