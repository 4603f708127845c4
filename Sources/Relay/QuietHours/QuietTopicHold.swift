import DAO
import FCM
import HubModel
import HubTime
import Logging
import Mongo

/// What the relay reads and writes to keep messages away from devices in their quiet hours: the windows, the
/// subscriptions that say which devices are in them, the held-back token sends, the messages they send, and the
/// clock quiet hours are read by.
public struct QuietHoursStores: Sendable {
    public let windows: QuietWindowDAO
    public let subscriptions: SubscriptionDAO
    public let deferrals: QuietDeferralDAO
    /// The messages the held-back sends are of.
    public let messages: MessageDAO
    /// The deliveries a held-back send of a message to persons and groups answers, and their devices.
    public let deliveries: DeliveryDAO
    public let devices: DeviceDAO
    /// The persons' delivery choices: whether anyone holds a subject for a digest or turned it off.
    public let settings: PersonSettingsDAO
    /// The time quiet hours are read at and held-back sends fall due by (Unix ms): the relay's clock, which tests
    /// move past a window instead of waiting for it.
    public let now: UnixClock
    /// The windows some device has, read once for the messages that ask at once (every active topic message asks).
    let occupiedWindows: BatchingGate<Void, [QuietWindow]>

    /// The stores of `database`, on the clock `now`.
    public init(database: MongoDatabase, now: @escaping UnixClock) {
        let windows = QuietWindowDAO(database: database)
        self.windows = windows
        self.occupiedWindows = BatchingGate(maximumBatch: 1_024) { askers in
            let occupied = try await windows.occupied()
            return askers.map { _ in occupied }
        }
        self.subscriptions = SubscriptionDAO(database: database, now: now)
        self.deferrals = QuietDeferralDAO(database: database, now: now)
        self.messages = MessageDAO(database: database, now: now)
        self.deliveries = DeliveryDAO(database: database, now: now)
        self.devices = DeviceDAO(database: database, now: now)
        self.settings = PersonSettingsDAO(database: database, now: now)
        self.now = now
    }
}

/// Holds a passive or active topic message back from the devices in their quiet hours: which quiet topics its
/// requests leave out (`QuietHoursPolicy.exclusions`), and a token send for each device left out, due when its
/// window ends, stored before the message goes to FCM (a stop in between leaves the sends on record; scheduling
/// again stores nothing twice).
struct QuietTopicHold: Sendable {
    let stores: QuietHoursStores
    let logger: Logger
    let now: UnixClock

    /// The topics a correction of `message` leaves out now: those of the quiet windows (a phone in its quiet hours
    /// gets no pop-up: one still waiting for the message gets it corrected when its window ends, one that had it shows
    /// the corrected texts when the app next catches up), and first the subject's held topic (`heldTopic`: the
    /// devices that got the message in the background get no pop-up for its correction either; they read it by their
    /// catch-up). Empty when the database fails (the correction goes to the whole topic).
    func quietTopics(forCorrectionOf message: RelayMessage) async -> [String] {
        guard !message.breaksThroughPreferences, !message.topicKey.isEmpty else { return [] }
        let held = await heldTopic(message)
        do {
            let windows = try await stores.occupiedWindows.submit(())
            return (held.map { [$0] } ?? [])
                + QuietHoursPolicy.exclusions(
                    for: message.urgency, overridePreferences: message.overridePreferences, windows: windows,
                    now: now(), limit: FCMMapping.maximumExcludedTopics - (held == nil ? 0 : 1)
                ).excluded.map(\.topic)
        } catch {
            logger.warning(
                "quiet hours could not be read: the correction goes to the whole topic",
                metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
            return held.map { [$0] } ?? []
        }
    }

    /// The held topic of `message`'s subject (`ServerOwnedTopic.held`) when some person chose `digest` or `off` for
    /// it and the message yields to preferences (`PreferencePolicy`): its notification leaves their devices out. Nil
    /// otherwise, and when the database fails (the notification then goes to them too rather than be lost).
    func heldTopic(_ message: RelayMessage) async -> String? {
        guard !message.breaksThroughPreferences, !message.topicKey.isEmpty, message.distribution == .alert,
            message.display
        else { return nil }
        do {
            return try await stores.settings.anyHolding(subject: message.topicKey)
                ? ServerOwnedTopic.held(message.topicKey) : nil
        } catch {
            logger.warning(
                "delivery choices could not be read: the message notifies every device of its topic",
                metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
            return nil
        }
    }

    /// The quiet topics `message` (stored as `stored`) is to leave out, once the token sends of their devices are
    /// scheduled; empty to send it to the whole topic. When the database fails, the message goes to the whole topic
    /// (a quiet device then gets it at once rather than never).
    /// With `held` (`heldTopic`), one exclusion fewer is left for quiet windows, and the devices held never get a
    /// token send (they get the data in the background, or read it by their catch-up).
    func excludedTopics(_ message: RelayMessage, stored: Message, held: String? = nil) async -> [String] {
        guard !message.breaksThroughPreferences, !message.topicKey.isEmpty else { return [] }
        let time = now()
        do {
            let (excluded, overflow) = QuietHoursPolicy.exclusions(
                for: message.urgency, overridePreferences: message.overridePreferences,
                windows: try await stores.occupiedWindows.submit(()),
                now: time, limit: FCMMapping.maximumExcludedTopics - (held == nil ? 0 : 1))
            guard !excluded.isEmpty else { return [] }
            if !overflow.isEmpty {
                logger.notice(
                    "more quiet windows than a condition can leave out: their devices get the message now",
                    metadata: [
                        "msi_key": "\(message.msiKey)",
                        "windows": "\(overflow.map(\.topic).joined(separator: ","))",
                    ])
            }
            let ends = Dictionary(
                excluded.map { ($0.topic, $0.quietHours.end(after: time)) },
                uniquingKeysWith: { first, _ in first })
            let held = try await stores.subscriptions.quietSubscribers(
                of: message.topicKey,
                quietTopics: excluded.map(\.topic), leavingOut: held)
            // A translated message goes to each held-back device in its language: their locales are read with it.
            let locales =
                message.translations.isEmpty || held.isEmpty
                ? [:]
                : try await stores.devices.devices(ids: held.map(\.subscription.device)).compactMapValues(\.locale)
            try await stores.deferrals.schedule(
                held.compactMap { subscription, quietTopic in
                    ends[quietTopic].map {
                        QuietDeferral(
                            message: stored.id, msiKey: stored.msiKey, device: subscription.device,
                            registration: subscription.registration,
                            platform: subscription.platform, quietTopic: quietTopic, dueAt: $0,
                            locale: locales[subscription.device])
                    }
                })
            return excluded.map(\.topic)
        } catch {
            logger.warning(
                "quiet hours could not be read: the message goes to the whole topic",
                metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
            return []
        }
    }
}
