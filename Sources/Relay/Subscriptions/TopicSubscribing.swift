import FCM

/// What the reconciler needs of FCM's topic subscription API: the transport (`FCMTopicSubscriptions`) behind a
/// small protocol, so the policy (leases, rate, retries) stays apart from it.
public protocol TopicSubscribing: Sendable {
    /// Subscribes `registration` to `topic`; subscribing twice succeeds.
    func subscribe(registration: String, topic: String) async throws -> FCMTopicSubscriptions.Outcome
    /// Unsubscribes `registration` from `topic`; unsubscribing twice succeeds.
    func unsubscribe(registration: String, topic: String) async throws -> FCMTopicSubscriptions.Outcome
    /// Every topic `registration` is subscribed to.
    func topics(of registration: String) async throws -> [String]
}

extension FCMTopicSubscriptions: TopicSubscribing {}
