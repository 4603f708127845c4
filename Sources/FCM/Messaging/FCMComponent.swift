import HubModel

/// One of the spec's "components": one FCM request of a message, named as the relay records it
/// (`relay.components.<name>`; never a "." in a name).
public struct FCMComponent: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The name: `notification`, `data`, `device`, `lang-<code>` or `lang-default`.
    public let rawValue: String

    /// The component named `rawValue`.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// An Alert's pop-up: `notification` {title, body} with `data` {msi_key}.
    public static let notification = FCMComponent(rawValue: "notification")
    /// The data the app stores: every field of the message as strings, delivered silently.
    public static let data = FCMComponent(rawValue: "data")
    /// One device's request of a message to persons and groups: `message.token`, an Alert's notification with the
    /// data, or an Information's data alone.
    public static let device = FCMComponent(rawValue: "device")
    /// A translated Alert's request to the devices on no language topic sent separately: the main text.
    public static let defaultLanguage = FCMComponent(rawValue: "lang-default")

    /// A translated Alert's request to the devices on `lang-<code>`: the notification and data in that language.
    public static func language(_ code: String) -> FCMComponent {
        FCMComponent(rawValue: languagePrefix + code)
    }

    /// The language of a `lang-<code>` component; nil for any other (`lang-default` included).
    public var language: String? {
        guard rawValue.hasPrefix(Self.languagePrefix), self != .defaultLanguage else { return nil }
        return String(rawValue.dropFirst(Self.languagePrefix.count))
    }

    /// The name.
    public var description: String { rawValue }

    /// What a language component's name starts with, as the hub's language topics do (`lang-hi`).
    public static let languagePrefix = LocaleLanguage.topicPrefix
}
