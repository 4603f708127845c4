/// Stores pushed messages once each and says what to show (the design's Listener module).
struct Listener: Sendable {
    let store: MessageStore
    let hub: HubConnection
    /// The device's registration, to catch up a private message that came truncated; nil inside a catch-up.
    var registration: DeviceRegistration?
    /// Where a `received` receipt of each new message is queued; nil: none is.
    var receipts: ReceiptQueue?

    /// Stores the message of an FCM data payload unless it is stored already, reading it from the hub when the
    /// payload carries only its key (a message to persons or groups, which `GET /message/:msiKey` shows only to its
    /// sender, by a catch-up); returns what the app should show, or nil for a message already stored.
    /// - Throws: `.invalidPayload`, the hub's errors (`.hub(status: 404, code: "message_not_found")` for a key it
    ///   does not know), `.notRegistered`, `.network`, `.database`.
    func receive(payload: [String: String]) async throws(MSIKitError) -> ReceivedMessage? {
        let payload = try PushPayload(payload)
        // An Alert arrives twice (notification and data components): the second is answered without the network.
        if try await store.exists(msiKey: payload.msiKey) { return nil }
        let message: Message
        switch payload {
        case .complete(let complete):
            message = complete
        case .reference(let msiKey, byCatchUp: true):
            guard let registration else { throw MSIKitError(.notRegistered, "The device is not registered.") }
            // The catch-up stores every message the device missed; what it brings beyond this one was new as well.
            let caughtUp = try await CatchUp(store: store, hub: hub, registration: registration, receipts: receipts).run()
            return caughtUp.first { $0.message.msiKey == msiKey }
        case .reference(let msiKey, byCatchUp: false):
            let answer: HubMessage = try await hub.json("GET", ["message", msiKey])
            message = answer.stored
        }
        return try await store(message)
    }

    /// Stores a message and queues its `received` receipt; returns what to show if it was new.
    func store(_ message: Message) async throws(MSIKitError) -> ReceivedMessage? {
        guard try await store.add(message) else { return nil }
        try await receipts?.enqueue(message.msiKey, .received)
        if message.distribution == .alert {
            return .alert(title: message.title, body: message.desc, message: message)
        }
        return .information(message)
    }
}
