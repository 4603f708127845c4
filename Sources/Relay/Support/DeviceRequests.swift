import DAO
import FCM

/// Which FCM requests one device gets for a message sent to it by its token: the one decision the fan-out, the
/// escalation's re-sends and the quiet-hours deferrals take, so a device gets a message the same way whoever sends it.
enum DeviceRequests {
    /// The requests of `message` for the device of `token`, in its `language` when the message has it. A device the
    /// message reached as one of its persons', groups' or sample's (`delivery` via person, group or cohort): the one
    /// device request the fan-out sends. A device of a topic message (no delivery, or one `via: topic`): the topic's
    /// components, by token (the data keeps `topic_key`).
    static func requests(
        for message: RelayMessage, token: String, delivery: Delivery?, options: FCMMappingOptions,
        language: String?
    ) -> [FCMRequest] {
        guard let delivery, delivery.via != .topic else {
            return FCMMapping.requests(for: message, token: token, options: options, language: language)
        }
        return [request(for: message, token: token, delivery: delivery, options: options, language: language)]
    }

    /// The one request a device reached as one of a message's persons', groups' or sample's gets (`delivery` via
    /// person, group or cohort): what the fan-out sends, and what a re-send or a held-back send repeats.
    static func request(
        for message: RelayMessage, token: String, delivery: Delivery, options: FCMMappingOptions, language: String?
    ) -> FCMRequest {
        FCMMapping.deviceRequest(
            for: message, token: token, audience: audience(of: delivery), options: options, language: language,
            muted: delivery.muted, unread: delivery.unread, roomUnread: delivery.roomUnread)
    }

    /// How a delivery's device was reached, as the request's data tells the app.
    static func audience(of delivery: Delivery) -> FCMAudience {
        switch delivery.via {
        case .cohort, .topic: .cohort
        case .person, .group: delivery.group.map(FCMAudience.group) ?? .person
        }
    }
}
