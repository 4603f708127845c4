import Mongo

/// What the app told the hub of one message on one device, in `receipts`: it arrived, it was opened, or the person
/// acknowledged it (with one of the message's responses, if it asked for them).
public struct Receipt: Sendable, Equatable {
    /// The three things a device reports of a message, once each.
    public enum Event: String, Sendable, CaseIterable {
        case received, opened, acknowledged
        /// The person read the message without opening it in the app (a chat's list, another device's notice):
        /// like `opened`, it takes the message off their unread.
        case read
    }

    /// "<message _id hex>/<device id hex>/<event>": a device reports each event of a message once.
    public var id: String { Self.id(message: message, device: device, event: event) }
    /// The message's `_id`.
    public var message: ObjectID
    public var device: ObjectID
    /// The person the device was bound to when it reported, if any.
    public var person: String?
    public var event: Event
    /// The person's answer, for `.acknowledged`.
    public var response: String?
    /// Whether `response` is one the message offered (`ack.responses`), counted under its own name; else it is
    /// free text, counted in one bucket (`free_text`) so no device names a field of the counts.
    public var responseOffered: Bool
    /// When it happened on the device (Unix ms, the device's clock).
    public var at: Int64
    public var platform: Platform

    public init(
        message: ObjectID, device: ObjectID, person: String?, event: Event, response: String?,
        responseOffered: Bool = false, at: Int64, platform: Platform
    ) {
        self.message = message
        self.device = device
        self.person = person
        self.event = event
        self.response = response
        self.responseOffered = responseOffered
        self.at = at
        self.platform = platform
    }

    /// Reads a stored receipt; nil when it is not one.
    init?(document: BSONDocument) {
        guard let message = document.objectID("message"), let device = document.objectID("device"),
            let event = document["event"]?.stringValue.flatMap(Event.init(rawValue:)),
            let platform = document["platform"]?.stringValue.flatMap(Platform.init(rawValue:))
        else { return nil }
        self.init(
            message: message, device: device, person: document["person"]?.stringValue, event: event,
            response: document["response"]?.stringValue,
            responseOffered: document["response_offered"]?.boolValue ?? false,
            at: document["at"]?.int64Value ?? 0, platform: platform)
    }

    /// The `_id` of `device`'s receipt of `event` for `message`.
    public static func id(message: ObjectID, device: ObjectID, event: Event) -> String {
        "\(message.hex)/\(device.hex)/\(event.rawValue)"
    }

    /// The document stored, with the time the hub stored it (`stored_at`, Unix ms) and the batch that stored it
    /// (`batch`: which receipts a batch counts, should its counting be interrupted).
    func document(storedAt: Int64, batch: String) -> BSONDocument {
        var elements: [(key: String, value: BSONValue)] = [
            ("_id", .string(id)), ("message", .objectID(message)), ("device", .objectID(device)),
        ]
        if let person { elements.append(("person", .string(person))) }
        elements.append(("event", .string(event.rawValue)))
        if let response {
            elements.append(("response", .string(response)))
            if responseOffered { elements.append(("response_offered", true)) }
        }
        elements += [
            ("at", .int64(at)), ("platform", .string(platform.rawValue)), ("stored_at", .int64(storedAt)),
            ("batch", .string(batch)),
        ]
        return BSONDocument(elements)
    }
}

/// A message's receipts counted as they were stored (`receipt_counts`): by event, by platform and event, and the
/// acknowledgements by the response offered that they chose, or as free text.
public struct ReceiptCounts: Sendable, Equatable {
    /// Every event present, 0 when none.
    public var byEvent: [Receipt.Event: Int64]
    /// The same per platform that has receipts.
    public var byPlatform: [Platform: [Receipt.Event: Int64]]
    /// Acknowledgements by the offered response they chose (those without one, or with free text, are not listed).
    public var responses: [String: Int64]
    /// Acknowledgements with a free-text response (to a message that offered none).
    public var freeText: Int64
    /// The channel and area of a topic message (ids as hex), noted when its first receipt was counted.
    public var channel: String?, area: String?

    public init(
        byEvent: [Receipt.Event: Int64] = [:], byPlatform: [Platform: [Receipt.Event: Int64]] = [:],
        responses: [String: Int64] = [:], freeText: Int64 = 0, channel: String? = nil, area: String? = nil
    ) {
        self.byEvent = Dictionary(uniqueKeysWithValues: Receipt.Event.allCases.map { ($0, byEvent[$0] ?? 0) })
        self.byPlatform = byPlatform
        self.responses = responses
        self.freeText = freeText
        self.channel = channel
        self.area = area
    }

    /// Reads a stored counts document.
    init(document: BSONDocument?) {
        guard let document else { self.init(); return }
        let events = document["events"]?.documentValue ?? [:]
        var byPlatform: [Platform: [Receipt.Event: Int64]] = [:]
        for (key, value) in document["platforms"]?.documentValue ?? [:] {
            guard let platform = Platform(rawValue: key), let counts = value.documentValue else { continue }
            byPlatform[platform] = Dictionary(
                uniqueKeysWithValues: Receipt.Event.allCases.map {
                    ($0, counts[$0.rawValue]?.int64Value ?? 0)
                })
        }
        var responses: [String: Int64] = [:]
        for (key, value) in document["responses"]?.documentValue ?? [:] {
            responses[ResponseKey.decode(key)] = value.int64Value ?? 0
        }
        self.init(
            byEvent: Dictionary(
                uniqueKeysWithValues: Receipt.Event.allCases.map {
                    ($0, events[$0.rawValue]?.int64Value ?? 0)
                }), byPlatform: byPlatform, responses: responses, freeText: document["free_text"]?.int64Value ?? 0,
            channel: document["channel"]?.stringValue,
            area: document["area"]?.stringValue)
    }
}

/// A response as a field name of `receipt_counts.responses`: "%", "." and "$" (which a field path cannot hold) and
/// NUL percent-encoded, so any response a message offers is a key of its own.
enum ResponseKey {
    static func encode(_ response: String) -> String {
        var key = ""
        for scalar in response.unicodeScalars {
            switch scalar {
            case "%", ".", "$", "\u{0}":
                let hex = String(scalar.value, radix: 16, uppercase: true)
                key += "%" + (hex.count < 2 ? "0" + hex : hex)
            default: key.unicodeScalars.append(scalar)
            }
        }
        return key
    }

    static func decode(_ key: String) -> String {
        guard key.contains("%") else { return key }
        var result = String.UnicodeScalarView()
        var scalars = Array(key.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            if scalar == "%", scalars.count >= 2,
                let value = UInt32(String(String.UnicodeScalarView(scalars.prefix(2))), radix: 16),
                let decoded = Unicode.Scalar(value)
            {
                result.append(decoded)
                scalars.removeFirst(2)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }
}
