/// One of the spec's "components": one FCM request of a message.
public enum FCMComponent: String, Sendable, Hashable, CaseIterable {
    /// An Alert's pop-up: `notification` {title, body} with `data` {msi_key}.
    case notification
    /// The data the app stores: every field of the message as strings, delivered silently.
    case data
    /// One device's request of a message to persons and groups: `message.token`, an Alert's notification with the
    /// data, or an Information's data alone.
    case device
}
