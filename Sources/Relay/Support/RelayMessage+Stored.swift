import DAO
import FCM
import HubModel
import Mongo

extension RelayMessage {
    /// A stored message as the relay sends it (the outbox, held-back sends, re-sends): its texts, audience and relay
    /// expiry, and the fields a message stores only when its sender gave them (`lang`, `translations`, `image`,
    /// `kind`, `dismissible`, `expires_at`, `display`), read from the document; nil without a distribution the
    /// mapping knows. `now` (Unix ms) is when it is sent: the time to live counts from it (`sendingAt`).
    public init?(stored message: Message, now: Int64? = nil) {
        guard let distribution = RelayMessage.Distribution(rawValue: message.distribution) else { return nil }
        let document = message.document
        let state = RelayState(message: document)
        self.init(
            msiKey: message.msiKey.hex, topicKey: message.topicKey, distribution: distribution, title: message.title,
            desc: message.desc, message: message.message, timestamp: message.timestamp,
            ttlSeconds: state?.ttlSeconds, expiresAt: state?.expiresAt, data: message.data,
            urgency: message.urgency,
            ackResponses: AckRequest(document: document["ack"]?.documentValue)?.responses,
            language: document["lang"]?.stringValue,
            translations: Self.translations(document["translations"]?.documentValue),
            image: document["image"]?.stringValue,
            kind: document["kind"]?.stringValue,
            // Stored only when false: anything else (absent, or not a boolean) is the default.
            dismissible: document["dismissible"]?.boolValue != false,
            display: document["display"]?.boolValue != false,
            senderExpiresAt: document["expires_at"]?.int64Value,
            sendingAt: now,
            room: document["room"]?.stringValue, roomName: document["room_name"]?.stringValue)
        self.overridePreferences = message.overridePreferences
    }

    /// The stored `translations` ({"hi": {"title", "desc", "message"}, ...}) in their stored order; an entry that is
    /// not a document with a string title is left out (the send rules store none such).
    static func translations(_ stored: BSONDocument?) -> [Translation] {
        (stored ?? [:]).compactMap { language, value in
            guard let text = value.documentValue, let title = text["title"]?.stringValue else { return nil }
            return Translation(
                language: language, title: title, desc: text["desc"]?.stringValue ?? "",
                message: text["message"]?.stringValue ?? "")
        }
    }
}
