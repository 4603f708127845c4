/// Stores pushed messages once each and says what to show (the design's Listener module).
struct Listener: Sendable {
    let store: MessageStore
    let hub: HubConnection
    /// The device's registration, to catch up a private message that came truncated; nil inside a catch-up.
    var registration: DeviceRegistration?
    /// Where a `received` receipt of each new message is queued; nil: none is.
    var receipts: ReceiptQueue?
    /// Where the data of messages not shown (`display` false) goes; nil: nowhere (they are dropped).
    var flags: FlagStore?
    /// The device's locale ("hi-IN"): a translated message is stored in its language when it has it.
    var locale: String?

    /// Stores the message of an FCM data payload unless it is stored already, reading it from the hub when the
    /// payload carries only its key (a message to persons or groups, which `GET /message/:msiKey` shows only to its
    /// sender, by a catch-up); returns what the app should show, or nil for a message already stored. A message not
    /// to be shown (`display` false) is never stored: its data goes to the flags, and nil is returned.
    /// - Throws: `.invalidPayload`, the hub's errors (`.hub(status: 404, code: "message_not_found")` for a key it
    ///   does not know), `.notRegistered`, `.network`, `.database`.
    func receive(payload data: [String: String]) async throws(MSIKitError) -> ReceivedMessage? {
        // A daily digest is no message: it is kept as the last digest (`MSIClient.lastDigest()`), never stored.
        if let digest = Digest(payload: data) {
            _ = try await DigestStore(database: store.database).keep(digest)
            return nil
        }
        let payload = try PushPayload(data)
        switch payload {
        case .withdrawal(let msiKey):
            return try await withdraw(msiKey)
        case .acknowledged(let msiKey):
            return try await acknowledged(msiKey)
        case .read(let msiKey, let unread):
            return try await read(msiKey, unread: unread)
        case .correction(let message):
            return try await correct(message)
        default:
            break
        }
        // An Alert arrives twice (notification and data components): the second is answered without the network.
        if try await store.exists(msiKey: payload.msiKey) { return nil }
        switch payload {
        case .complete(let message):
            // A muted group's message (its person muted the group): stored, never shown as an Alert.
            return try await store(message, muted: data["muted"] == "1")
        case .background(let message):
            try await apply(message)
            return nil
        case .correction, .withdrawal, .acknowledged, .read:
            return nil  // taken above
        case .reference(let msiKey, byCatchUp: true):
            guard let registration else { throw MSIKitError(.notRegistered, "The device is not registered.") }
            // The catch-up stores every message the device missed; what it brings beyond this one was new as well.
            let caughtUp = try await CatchUp(
                store: store, hub: hub, registration: registration, receipts: receipts,
                flags: flags, locale: locale
            ).run()
            return caughtUp.first { $0.message.msiKey == msiKey }
        case .reference(let msiKey, byCatchUp: false):
            let answer: HubMessage = try await hub.json("GET", ["message", msiKey])
            return try await take(answer)
        }
    }

    /// Replaces a stored message's texts with a correction's (in the device's language), or stores it when it never
    /// arrived; returns `.corrected`.
    func correct(_ message: Message) async throws(MSIKitError) -> ReceivedMessage? {
        var message = message.localized(to: locale)
        message.corrected = true
        if try await !store.correct(message) {
            guard try await store.add(message) else { return nil }
            try await store.correct(message)
            try await receipts?.enqueue(message.msiKey, .received)
        }
        return .corrected(message)
    }

    /// Removes a withdrawn message from the store and its delivered notification (`DeliveredNotifications`);
    /// returns `.withdrawn` with the message as it was, or nil when it was not stored.
    func withdraw(_ msiKey: String) async throws(MSIKitError) -> ReceivedMessage? {
        DeliveredNotifications.remove(msiKey: msiKey)
        guard let stored = try await store.message(msiKey: msiKey), try await store.remove(msiKey: msiKey) else {
            return nil
        }
        return .withdrawn(stored)
    }

    /// Marks a message its person acknowledged on another device and removes its delivered notification
    /// (`DeliveredNotifications`); returns `.acknowledged` with the message, or nil when it is not stored.
    func acknowledged(_ msiKey: String) async throws(MSIKitError) -> ReceivedMessage? {
        DeliveredNotifications.remove(msiKey: msiKey)
        guard try await store.markAcknowledged(msiKey: msiKey), var stored = try await store.message(msiKey: msiKey)
        else { return nil }
        stored.acknowledged = true
        return .acknowledged(stored)
    }

    /// A message its person read on another device: its delivered notification is removed (`DeliveredNotifications`);
    /// returns `.read` with the message and the person's count, or nil when it is not stored.
    func read(_ msiKey: String, unread: Int?) async throws(MSIKitError) -> ReceivedMessage? {
        DeliveredNotifications.remove(msiKey: msiKey)
        guard let stored = try await store.message(msiKey: msiKey) else { return nil }
        return .read(stored, unread: unread)
    }

    /// Takes a message as the hub shows it (a catch-up's, or one read by its key): stores it, or, when it is not to
    /// be shown, applies its data to the flags; returns what to show if it was new.
    func take(_ message: HubMessage) async throws(MSIKitError) -> ReceivedMessage? {
        if let background = message.background {
            try await apply(background)
            return nil
        }
        return try await store(message.stored)
    }

    /// Applies a message not shown to the flags once, and queues its `received` receipt the first time.
    func apply(_ message: BackgroundMessage) async throws(MSIKitError) {
        guard let flags, try await flags.apply(message) else { return }
        try await receipts?.enqueue(message.msiKey, .received)
    }

    /// Stores a message, in the device's language when it has it (`Message.localized(to:)`), and queues its
    /// `received` receipt; returns what to show if it was new.
    func store(_ message: Message, muted: Bool = false) async throws(MSIKitError) -> ReceivedMessage? {
        let message = message.localized(to: locale)
        guard try await store.add(message) else { return nil }
        try await receipts?.enqueue(message.msiKey, .received)
        if message.distribution == .alert && !muted {
            return .alert(title: message.title, body: message.desc, message: message)
        }
        return .information(message)
    }
}
