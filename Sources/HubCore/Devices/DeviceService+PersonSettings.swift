import DAO
import HubTime
import Mongo

/// A change of a person's settings as a device asks for it: what it names changes, the rest stays.
public struct PersonSettingsChange: Sendable {
    /// The person-wide fields (quiet hours, locale, digest hour).
    public var fields = PersonSettingsDAO.Change()
    /// Delivery choices by scope, then topic key or group id.
    public var delivery: [DeliveryScope: [String: DeliveryMode]] = [:]

    public init() {}

    /// At most this many delivery choices in one change.
    public static let maximumChoices = 200
}

extension DeviceService {
    /// The settings of the person `device` is bound to.
    /// - Throws: `PersonSettingsRefusal.notBound`; `DAOError`.
    public func personSettings(of device: Device) async throws -> PersonSettings {
        try await personSettings.settings(of: try Self.boundPerson(device))
    }

    /// Changes the settings of the person `device` is bound to, as `change` names them, after checking all of them
    /// (nothing changes when one is refused); then gives the person's quiet hours and locale to every device of the
    /// person (`followPersonSettings`). A Forced subject cannot be turned `off`, as it cannot be left.
    /// - Throws: `PersonSettingsRefusal`, `DeviceRefusal` (`.topicNotFound`, `.forcedSubscription`), `GroupRefusal`
    ///   (`.groupNotFound`, `.invalidID`), `DAOError`.
    public func changePersonSettings(_ change: PersonSettingsChange, by device: Device) async throws -> PersonSettings {
        let person = try Self.boundPerson(device)
        let count = change.delivery.values.reduce(0) { $0 + $1.count }
        guard count <= PersonSettingsChange.maximumChoices else {
            throw PersonSettingsRefusal(
                .invalidSettings, "delivery: at most \(PersonSettingsChange.maximumChoices) choices in one change")
        }
        for (topicKey, mode) in change.delivery[.subject] ?? [:] {
            let location = try await subject(topicKey)
            if mode == .off, location.subject.level == SubscriptionLevel.forced.rawValue {
                throw DeviceRefusal(
                    .forcedSubscription, "\(location.subject.name) is Forced: every person receives its messages")
            }
        }
        for groupID in (change.delivery[.group] ?? [:]).keys {
            guard try await groups.group(id: try GroupService.checkedGroupID(groupID)) != nil else {
                throw GroupRefusal(.groupNotFound, "no group has the id \(groupID)")
            }
        }
        try await personSettings.apply(change.fields, to: person)
        for scope in DeliveryScope.allCases {
            for (id, mode) in change.delivery[scope] ?? [:] {
                try await personSettings.setDelivery(mode, scope: scope, id: id, for: person)
            }
        }
        let settings = try await personSettings.settings(of: person)
        let subjects = change.delivery[.subject] ?? [:]
        if change.fields.quietHours != nil || change.fields.locale != nil || !subjects.isEmpty {
            for each in try await devices.devices(ofPerson: person) {
                _ = try await followPersonSettings(each, settings)
                try await holdSubjects(subjects, on: each)
            }
        }
        try await planDigest(settings)
        return settings
    }

    /// Plans the person's next digest at their digest time (their hour and zone as they are now), or ends their
    /// digests when nothing of theirs is in digest mode any more.
    /// - Throws: `DAOError`.
    func planDigest(_ settings: PersonSettings) async throws {
        if digestPolicy.wantsDigest(settings) {
            try await digests.plan(settings.person, dueAt: digestPolicy.nextDue(after: now(), for: settings))
        } else {
            try await digests.cancel(settings.person)
        }
    }

    /// Subscribes `device` to the held topic of each subject of `modes` in `digest` or `off`
    /// (`ServerOwnedTopic.held`) and out of it for those back to `instant`, through the reconciler.
    /// - Throws: `DAOError`.
    func holdSubjects(_ modes: [String: DeliveryMode], on device: Device) async throws {
        let held = modes.filter { $0.value != .instant }.keys.sorted().map(ServerOwnedTopic.held)
        let instant = modes.filter { $0.value == .instant }.keys.sorted().map(ServerOwnedTopic.held)
        if !held.isEmpty { try await subscriptions.set(want: true, topics: held, for: device) }
        if !instant.isEmpty { try await subscriptions.set(want: false, topics: instant, for: device) }
        if !held.isEmpty || !instant.isEmpty { reconcilerSignal.notify() }
    }

    /// Gives `device` its person's quiet hours and locale, those the person set (a device keeps its own where the
    /// person set none). Called for every device of a person when the person's settings change, and for a device when
    /// it is bound.
    /// - Throws: `DAOError`.
    func followPersonSettings(_ device: Device, _ settings: PersonSettings) async throws -> Device {
        var device = device
        if let quietHours = settings.quietHours, device.quietHours?.key != quietHours.key {
            device = try await setQuietHours(device, quietHours)
        }
        if let locale = settings.locale, device.locale != locale {
            device = try await update(device, registration: nil, locale: locale, appVersion: nil)
        }
        return device
    }

    /// What the school sees of a person's preferences (the portal's person page, read only: staff never change them):
    /// their settings, their next digest and the last one sent (nil when they have none).
    /// - Throws: `GroupRefusal.invalidID` for a malformed person id; `DAOError`.
    public func preferences(ofPerson person: String) async throws
        -> (settings: PersonSettings, digest: (dueAt: Int64, last: SentDigest?)?)
    {
        let person = try GroupService.checkedPersonID(person)
        return (try await personSettings.settings(of: person), try await digests.status(of: person))
    }

    /// The person `device` is bound to.
    /// - Throws: `PersonSettingsRefusal.notBound`.
    static func boundPerson(_ device: Device) throws -> String {
        guard let person = device.person else {
            throw PersonSettingsRefusal(
                .notBound, "the device is bound to no person: bind it first (PUT /device/:deviceID/person)")
        }
        return person
    }

    /// The time of day of a digest: "HH:MM", two digits each.
    /// - Throws: `PersonSettingsRefusal.invalidSettings`.
    public static func digestHour(_ text: String) throws -> String {
        guard let time = DailyTime(parsing: text) else {
            throw PersonSettingsRefusal(.invalidSettings, "digest_hour must be \"HH:MM\" (00:00 to 23:59) or null")
        }
        return time.description
    }

    /// A locale as the settings take it: a BCP 47 tag such as "de" or "pt-BR" (letters, digits and hyphens, 2 to
    /// 35 characters).
    /// - Throws: `PersonSettingsRefusal.invalidSettings`.
    public static func locale(_ text: String) throws -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".utf8)
        guard (2...35).contains(text.utf8.count), text.utf8.allSatisfy(allowed.contains) else {
            throw PersonSettingsRefusal(
                .invalidSettings, "locale must be a language tag such as \"de\" or \"pt-BR\", or null")
        }
        return text
    }
}
