/// Stores pushed messages once each and says what to show (the design's Listener module).
struct Listener: Sendable {
    let store: MessageStore
    let hub: HubConnection

    /// Stores the message of an FCM data payload unless it is stored already, reading it from the hub when the
    /// payload carries only its key; returns what the app should show, or nil for a message already stored.
    /// - Throws: `.invalidPayload`, the hub's errors (`.hub(status: 404, code: "message_not_found")` for a key it
    ///   does not know), `.network`, `.database`.
    func receive(payload: [String: String]) async throws(MSIKitError) -> ReceivedMessage? {
        let payload = try PushPayload(payload)
        // An Alert arrives twice (notification and data components): the second is answered without the network.
        if try await store.exists(msiKey: payload.msiKey) { return nil }
        let message: Message
        switch payload {
        case .complete(let complete):
            message = complete
        case .reference(let msiKey):
            let answer: HubMessage = try await hub.json("GET", ["message", msiKey])
            message = answer.stored
        }
        return try await store(message)
    }

    /// Stores a message; returns what to show if it was new.
    func store(_ message: Message) async throws(MSIKitError) -> ReceivedMessage? {
        guard try await store.add(message) else { return nil }
        if message.distribution == .alert {
            return .alert(title: message.title, body: message.desc, message: message)
        }
        return .information(message)
    }
}
