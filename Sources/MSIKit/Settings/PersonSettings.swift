import Foundation

/// How the person wants the messages of a subject or group: at once (the default), in the day's digest, or not as
/// notifications (the data still arrives, and catch-up has every message).
public enum DeliveryMode: String, Codable, Sendable, CaseIterable {
    case instant, digest, off
}

/// What a delivery choice is about.
public enum DeliveryTarget: Sendable, Hashable {
    /// A subject, by its topic key.
    case subject(String)
    /// A group or room, by its id.
    case group(String)
}

/// Hours in which the hub holds passive and active messages for every device of the person (time-sensitive and
/// critical ones still come): "22:00" to "07:00" in an IANA zone.
public struct QuietHours: Codable, Sendable, Hashable {
    public var from: String
    public var to: String
    /// An IANA time zone such as "Europe/Berlin".
    public var timeZone: String

    public init(from: String, to: String, timeZone: String) {
        self.from = from
        self.to = to
        self.timeZone = timeZone
    }

    enum CodingKeys: String, CodingKey {
        case from, to
        case timeZone = "tz"
    }
}

/// The settings of the device's person, which follow them to every device they bind
/// (`GET /device/:deviceID/person/settings`).
public struct PersonSettings: Decodable, Sendable, Equatable {
    /// The person the device is bound to.
    public var person: String
    public var quietHours: QuietHours?
    /// The language the person's devices use, when the person chose one.
    public var locale: String?
    /// When the day's digest goes ("HH:MM"); nil: the school's hour.
    public var digestHour: String?
    /// Every choice other than instant, per subject topic key.
    public var subjects: [String: DeliveryMode]
    /// Every choice other than instant, per group id.
    public var groups: [String: DeliveryMode]

    /// How the person wants the messages of `target` (instant when they chose nothing).
    public func delivery(for target: DeliveryTarget) -> DeliveryMode {
        switch target {
        case .subject(let topicKey): subjects[topicKey] ?? .instant
        case .group(let id): groups[id] ?? .instant
        }
    }

    struct Delivery: Decodable, Sendable {
        var subjects: [String: DeliveryMode]
        var groups: [String: DeliveryMode]
    }

    enum CodingKeys: String, CodingKey {
        case person, locale, delivery
        case quietHours = "quiet_hours"
        case digestHour = "digest_hour"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        person = try container.decode(String.self, forKey: .person)
        quietHours = try container.decodeIfPresent(QuietHours.self, forKey: .quietHours)
        locale = try container.decodeIfPresent(String.self, forKey: .locale)
        digestHour = try container.decodeIfPresent(String.self, forKey: .digestHour)
        let delivery = try container.decode(Delivery.self, forKey: .delivery)
        subjects = delivery.subjects
        groups = delivery.groups
    }
}
