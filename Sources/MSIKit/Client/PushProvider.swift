/// The push SDK as MSIKit sees it: the app wraps Firebase Messaging (or a simulator) in this, so the library
/// depends on no push SDK.
public protocol PushProvider: Sendable {
    /// The device's current FCM registration token.
    func currentToken() async throws -> String
    /// New tokens as the SDK rotates them.
    var tokenChanges: AsyncStream<String> { get }
    /// Each FCM message's data payload as it arrives (every value a string).
    var payloads: AsyncStream<[String: String]> { get }
}
