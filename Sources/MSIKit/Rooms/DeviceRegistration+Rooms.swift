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
}
