import Crypto
import Foundation

/// The Standard Webhooks signature (https://www.standardwebhooks.com): `v1,` and the base64 of HMAC-SHA256, keyed
/// with the secret's bytes (the base64 after `whsec_`), of `"<webhook-id>.<webhook-timestamp>.<body>"`.
public enum WebhookSignature {
    /// The secret's key bytes, or nil when it is not `whsec_` and base64.
    public static func key(secret: String) -> SymmetricKey? {
        guard secret.hasPrefix("whsec_"), let bytes = Data(base64Encoded: String(secret.dropFirst(6))),
            !bytes.isEmpty
        else { return nil }
        return SymmetricKey(data: bytes)
    }

    /// The `webhook-signature` value of `body` sent as message `id` at `timestamp` (Unix seconds).
    public static func sign(id: String, timestamp: Int64, body: [UInt8], key: SymmetricKey) -> String {
        var signed = Array("\(id).\(timestamp).".utf8)
        signed += body
        let code = HMAC<SHA256>.authenticationCode(for: signed, using: key)
        return "v1," + Data(code).base64EncodedString()
    }
}
