import DAO
import FCM
import Mongo

/// Brings every active device's subscriptions in line with the cube and with what FCM has: its wishes (every
/// Forced and Recommended subject wanted, Forced ones always, its language's topic and no other), then FCM's list compared with what the hub
/// recorded (drift becomes pending work), paced by the shared rate; then the retention purge.
struct RepairPass: Sendable {
    /// The Forced and Recommended topics of the cube.
    let wishes: SubscriptionReconciler.Wishes
    let devices: DeviceDAO
    let subscriptions: SubscriptionDAO
    let calls: SubscriptionCalls
    let rate: RateWindow
    let purge: RetentionPurge
    /// Wakes the calls once the drift found is pending.
    let signal: WakeSignal

    /// One pass over every active device, then the retention purge.
    /// - Throws: `DAOError`; `FCMError` other than a pause or a registration gone; `CancellationError`.
    func repairAll() async throws {
        let levels = try await wishes()
        var last: ObjectID?
        while !Task.isCancelled {
            let page = try await devices.activePage(after: last, limit: 200)
            guard let tail = page.last else { break }
            for device in page {
                try await repair(device, levels: levels)
            }
            last = tail.id
        }
        try await purge.removeExpiredDevices()
        signal.notify()
    }

    private func repair(_ device: Device, levels: (forced: [String], recommended: [String])) async throws {
        try await subscriptions.wantNew(levels.forced + levels.recommended, for: device)
        try await subscriptions.set(want: true, topics: levels.forced, for: device)
        try await subscriptions.setLanguage(LanguageTopic.topic(forLocale: device.locale), for: device)
        let atFCM: [String]
        do {
            atFCM = try await calls.topics(of: device.registration, pacedBy: rate)
        } catch let error as FCMError where error.code == .unregistered {
            try await calls.registrationGone(device.registration)
            return
        }
        // Only the hub's own topics (channel-area-subject ids, and the `lang-` topics it owns): what an app
        // subscribed itself to stays its own.
        try await subscriptions.observed(
            registration: device.registration,
            topics: Set(atFCM.filter { Self.isTopicKey($0) || LanguageTopic.isTopic($0) }),
            for: device)
    }

    /// Whether `topic` has the form of a topic key: three 24-hex ids joined by "-".
    static func isTopicKey(_ topic: String) -> Bool {
        let parts = topic.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 3 && parts.allSatisfy { $0.count == 24 && $0.allSatisfy(\.isHexDigit) }
    }
}
