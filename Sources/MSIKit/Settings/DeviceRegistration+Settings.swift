import Foundation

extension DeviceRegistration {
    /// The settings of the device's person (`GET /device/:id/person/settings`).
    func personSettings() async throws(MSIKitError) -> PersonSettings {
        let hub = hub
        return try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json("GET", ["device", id, "person", "settings"], headers: HubConnection.bearer(secret))
        }
    }

    /// Changes what `change` names of the person's settings (`PUT /device/:id/person/settings`); returns them all.
    func changePersonSettings(_ change: SettingsChange) async throws(MSIKitError) -> PersonSettings {
        let hub = hub
        return try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json(
                "PUT", ["device", id, "person", "settings"], headers: HubConnection.bearer(secret), body: change)
        }
    }

    /// Sends the device's own locale (`PUT /device/:id`), for a device bound to nobody.
    func updateLocale(_ locale: String) async throws(MSIKitError) {
        struct Body: Encodable, Sendable { var locale: String }
        struct Answer: Decodable, Sendable { var id: String? }
        let hub = hub
        let _: Answer = try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json(
                "PUT", ["device", id], headers: HubConnection.bearer(secret), body: Body(locale: locale))
        }
    }
}

/// A change of the person's settings as the hub takes it: only the fields set are sent; `clear...` sends null.
struct SettingsChange: Encodable, Sendable {
    enum Field<Value: Encodable & Sendable>: Sendable {
        case keep, clear, set(Value)
    }
    var quietHours: Field<QuietHours> = .keep
    var locale: Field<String> = .keep
    var subjects: [String: DeliveryMode] = [:]
    var groups: [String: DeliveryMode] = [:]

    enum CodingKeys: String, CodingKey {
        case locale, delivery
        case quietHours = "quiet_hours"
    }

    struct Delivery: Encodable, Sendable {
        var subjects: [String: DeliveryMode]?
        var groups: [String: DeliveryMode]?
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        func encode<Value>(_ field: Field<Value>, _ key: CodingKeys) throws {
            switch field {
            case .keep: break
            case .clear: try container.encodeNil(forKey: key)
            case .set(let value): try container.encode(value, forKey: key)
            }
        }
        try encode(quietHours, .quietHours)
        try encode(locale, .locale)
        if !subjects.isEmpty || !groups.isEmpty {
            try container.encode(
                Delivery(subjects: subjects.isEmpty ? nil : subjects, groups: groups.isEmpty ? nil : groups),
                forKey: .delivery)
        }
    }
}
