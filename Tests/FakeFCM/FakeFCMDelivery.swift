import Foundation

/// A message as a simulated phone receives it from the fake: what `FakeFCM.drainInbox(_:)` returns and
/// `GET /_inbox/{registration}` answers. Only the fake makes them.
public struct FakeFCMDelivery: Sendable, Hashable {
    /// The message's `notification` block.
    public struct Notification: Sendable, Hashable {
        /// The notification's title ("" when the message had none).
        public var title: String
        /// The notification's body ("" when the message had none).
        public var body: String
    }

    /// The topic the message was sent to; nil for a message sent to the registration's token or by condition.
    public var topic: String?
    /// The condition the message was sent to (`'a' in topics && !('b' in topics)`); nil for a topic or token send.
    public var condition: String? = nil
    /// The message's `data`.
    public var data: [String: String]
    /// The message's `notification`, if it had one.
    public var notification: Notification?

    /// `{"topic": String|null, "data": {..}, "notification": {"title", "body"}|null}`, and `"condition"` for a
    /// message sent by condition.
    var json: [String: Any] {
        var json: [String: Any] = [
            "topic": topic ?? NSNull(),
            "data": data,
            "notification": notification.map { ["title": $0.title, "body": $0.body] } ?? NSNull(),
        ]
        if let condition { json["condition"] = condition }
        return json
    }
}

/// An accepted messages:send body, read for delivery: whom it is for and what the phone gets.
struct SentMessage {
    var token: String?
    var delivery: FakeFCMDelivery

    /// Reads a body that `FCMValidation` accepted.
    init(body: [UInt8]) {
        let root = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        let message = root?["message"] as? [String: Any] ?? [:]
        token = message["token"] as? String
        let notification = (message["notification"] as? [String: Any]).map {
            FakeFCMDelivery.Notification(title: $0["title"] as? String ?? "", body: $0["body"] as? String ?? "")
        }
        delivery = FakeFCMDelivery(
            topic: message["topic"] as? String,
            condition: message["condition"] as? String,
            data: message["data"] as? [String: String] ?? [:],
            notification: notification
        )
    }
}

extension FakeFCMState.State {
    /// Queues `sent` for its token, for every registration subscribed to its topic now, or for every registration
    /// whose subscriptions now satisfy its condition.
    mutating func deliver(_ sent: SentMessage) {
        if let token = sent.token {
            inboxes[token, default: []].append(sent.delivery)
        } else if let topic = sent.delivery.topic {
            for registration in subscribers[topic] ?? [] {
                inboxes[registration, default: []].append(sent.delivery)
            }
        } else if let text = sent.delivery.condition, case .success(let condition) = FakeFCMCondition.parse(text) {
            // Only registrations with a subscription: FCM reaches an app instance through its topics.
            for (registration, topics) in subscriptions where condition.matches(Set(topics.keys)) {
                inboxes[registration, default: []].append(sent.delivery)
            }
        }
    }
}
