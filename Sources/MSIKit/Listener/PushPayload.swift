import Foundation

/// An FCM data payload as the hub sends it, read: either a complete message (the data component) or only its key
/// (an Alert's notification component, or a data component the hub truncated to fit FCM's size limit).
enum PushPayload: Sendable, Hashable {
    /// The data component with every field; the message can be stored as it is.
    case complete(Message)
    /// Only the key is to be trusted: the message must be read from the hub (`GET /message/:msiKey` for a subject's
    /// message; by a catch-up a message to persons or groups, private to its recipients, and one that asks for an
    /// acknowledgement, whose request only the device's view shows).
    case reference(msiKey: String, byCatchUp: Bool)
    /// A message not to be shown (`display` "false"): its `data` is for the app's flags.
    case background(BackgroundMessage)
    /// The sender corrected a message (`correction` "1"): its new texts, to replace the stored ones.
    case correction(Message)
    /// The sender withdrew a message (`withdrawn` "1"): the app removes it, and its notification.
    case withdrawal(msiKey: String)
    /// The person acknowledged a message on another of their devices (`acknowledged` "1"): the app removes its
    /// notification and marks it acknowledged.
    case acknowledged(msiKey: String)
    /// The person read the message on another of their devices (`read` "1"), their unread count now `unread`.
    case read(msiKey: String, unread: Int?)

    /// Reads a payload (every value a string). A message to a subject carries `topic_key`; one to persons or groups
    /// carries `audience` (and `group`, when it came through a group) instead, and the sender's own keys beside the
    /// hub's (its `data`); `urgency`, and `ack` ("1") with `ack_responses` (a JSON array) when the sender asks for an
    /// acknowledgement; `lang` (the texts' language) and `translations` (a JSON object of the other languages' texts)
    /// for a translated message; `image`, `kind`, `dismissible` ("false") and `expires_at` (Unix ms) when the sender
    /// gave them; `display` "false" for a message that is not shown.
    /// - Throws: `.invalidPayload` when `msi_key` is missing or not 24 hex digits, or a complete payload's
    ///   `timestamp` is not an integer.
    init(_ data: [String: String]) throws(MSIKitError) {
        guard let msiKey = data["msi_key"], Self.isObjectID(msiKey) else {
            throw MSIKitError(.invalidPayload, "The payload has no valid msi_key.")
        }
        if data["withdrawn"] == "1" {
            self = .withdrawal(msiKey: msiKey)
            return
        }
        if data["acknowledged"] == "1" {
            self = .acknowledged(msiKey: msiKey)
            return
        }
        if data["read"] == "1" {
            self = .read(msiKey: msiKey, unread: data["unread"].flatMap { Int($0) })
            return
        }
        let fields = ["dist", "title", "desc", "message", "timestamp"]
        // The notification component carries only msi_key; a truncated data component's text is cut short. A
        // message has a subject or an audience: a payload with neither is not the data component.
        let asksAck = data["ack"] == "1"
        let responses = data["ack_responses"].flatMap(Self.responses(json:))
        // A request for an acknowledgement without its responses (left out to fit FCM's limit) is not complete either.
        if data["truncated"] == "true" || fields.contains(where: { data[$0] == nil })
            || (data["topic_key"] == nil && data["audience"] == nil) || (asksAck && responses == nil)
        {
            self = .reference(msiKey: msiKey, byCatchUp: data["audience"] != nil || asksAck)
            return
        }
        guard let timestampText = data["timestamp"], let timestamp = Int64(timestampText) else {
            throw MSIKitError(.invalidPayload, "The payload's timestamp is not an integer.")
        }
        let expiresAt = data["expires_at"].flatMap { Int64($0) }
        let senderData = data.filter { !Self.isReserved($0.key) }
        if data["display"] == "false" {
            self = .background(
                BackgroundMessage(
                    msiKey: msiKey, timestamp: timestamp, data: senderData,
                    expiresAt: expiresAt))
            return
        }
        let message =
            (Message(
                msiKey: msiKey, topicKey: data["topic_key"] ?? "",
                distribution: Distribution(rawValue: data["dist"] ?? ""),
                title: data["title"] ?? "", desc: data["desc"] ?? "", text: data["message"] ?? "",
                timestamp: timestamp, data: senderData,
                audience: data["audience"].map(Audience.init(rawValue:)), groupID: data["group"],
                urgency: data["urgency"].map(Urgency.init(rawValue:)) ?? .active, acknowledgementRequested: asksAck,
                acknowledgementResponses: asksAck ? responses ?? [] : [], language: data["lang"],
                translations: data["translations"].flatMap(MessageText.translations(json:)) ?? [:],
                image: data["image"].flatMap(Banner.posterURL), kind: data["kind"] ?? Banner.generalKind,
                dismissible: data["dismissible"] != "false",
                expiresAt: expiresAt.map { Date(timeIntervalSince1970: Double($0) / 1000) }))
        // A correction cut to fit FCM's limit is read like any truncated message (`reference`) above.
        self = data["correction"] == "1" ? .correction(message) : .complete(message)
    }

    /// The keys of a payload that are the hub's or FCM's, not the sender's `data`.
    static let reservedKeys: Set<String> = [
        "msi_key", "topic_key", "dist", "title", "desc", "message", "timestamp", "truncated", "audience", "group",
        "urgency", "ack", "ack_responses", "from", "message_type", "collapse_key", "aps", "lang", "translations",
        "image", "kind", "dismissible", "display", "expires_at", "correction", "withdrawn",
        "acknowledged", "muted", "read", "unread",
    ]

    /// Whether `key` is the hub's or FCM's (the names above, and every `google…` or `gcm…` key FCM adds).
    static func isReserved(_ key: String) -> Bool {
        reservedKeys.contains(key) || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    /// `ack_responses` read: nil when it is not a JSON array of strings.
    static func responses(json: String) -> [String]? {
        try? JSONDecoder().decode([String].self, from: Data(json.utf8))
    }

    /// The message's key.
    var msiKey: String {
        switch self {
        case .complete(let message): message.msiKey
        case .reference(let msiKey, _): msiKey
        case .background(let message): message.msiKey
        case .correction(let message): message.msiKey
        case .withdrawal(let msiKey), .acknowledged(let msiKey), .read(let msiKey, _): msiKey
        }
    }

    /// Whether `text` is an ObjectId's hex form (24 hex digits), as every msi_key is; it goes into a URL path.
    static func isObjectID(_ text: String) -> Bool {
        text.utf8.count == 24
            && text.utf8.allSatisfy { byte in
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
            }
    }
}
