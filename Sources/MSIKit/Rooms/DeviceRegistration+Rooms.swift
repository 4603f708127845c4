import Foundation

extension DeviceRegistration {
    /// Posts `message` to room `group` (`POST /group/:groupID/messages` with the device's secret): the hub sends it
    /// to every other member's devices, never this person's; returns the post's `msi_key`.
    func post(toGroup group: String, message: String, title: String?, data: [String: String])
        async throws(MSIKitError) -> String
    {
        struct Body: Encodable, Sendable {
            var title: String?
            var message: String
            var data: [String: String]?
        }
        struct Answer: Decodable, Sendable {
            var msiKey: String
            enum CodingKeys: String, CodingKey { case msiKey = "msi_key" }
        }
        let hub = hub
        let answer: Answer = try await authorized { (_, secret) throws(MSIKitError) in
            try await hub.json(
                "POST", ["group", group, "messages"], headers: HubConnection.bearer(secret),
                body: Body(title: title, message: message, data: data.isEmpty ? nil : data))
        }
        return answer.msiKey
    }

    /// Takes this device's person out of room `group` (`DELETE /group/:groupID/members/:personID`), where the room
    /// lets members leave: the person is read from the hub (`GET /device/:id`), which is the one that knows it.
    func leave(group: String) async throws(MSIKitError) {
        struct Device: Decodable, Sendable { var person: String? }
        let hub = hub
        try await authorized { (id, secret) throws(MSIKitError) in
            let device: Device = try await hub.json("GET", ["device", id], headers: HubConnection.bearer(secret))
            guard let person = device.person else {
                throw MSIKitError(.invalidArgument, "The device is bound to no person: bind(assertion:) first.")
            }
            _ = try await hub.send(
                "DELETE", ["group", group, "members", person], headers: HubConnection.bearer(secret))
        }
    }

    /// Mutes room or group `group` for this device's person until `until` (nil: until unmuted):
    /// `PUT /device/:id/person/mutes/:groupID`. Every device of the person, a new one too, gets its messages in the
    /// background; time-sensitive and critical ones still sound.
    func mute(group: String, until: Date?) async throws(MSIKitError) {
        struct Body: Encodable, Sendable {
            var until: Int64?
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(until, forKey: .until)  // null, not left out: for good
            }
            enum CodingKeys: String, CodingKey { case until }
        }
        let hub = hub
        let until = until.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
        struct Answer: Decodable, Sendable { var group: String }
        let _: Answer = try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json(
                "PUT", ["device", id, "person", "mutes", group], headers: HubConnection.bearer(secret),
                body: Body(until: until))
        }
    }

    /// Unmutes room or group `group` for this device's person (`DELETE /device/:id/person/mutes/:groupID`).
    func unmute(group: String) async throws(MSIKitError) {
        let hub = hub
        try await authorized { (id, secret) throws(MSIKitError) in
            _ = try await hub.send(
                "DELETE", ["device", id, "person", "mutes", group], headers: HubConnection.bearer(secret))
        }
    }

    /// The person's unread counts (`GET /device/:id/unread`).
    func unreadCounts() async throws(MSIKitError) -> UnreadCounts {
        let hub = hub
        return try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json("GET", ["device", id, "unread"], headers: HubConnection.bearer(secret))
        }
    }
}
