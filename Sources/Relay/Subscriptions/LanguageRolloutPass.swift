import DAO
import Mongo
import Synchronization

/// Gives the devices registered before the hub owned language topics theirs, once: a walk of the registry in id
/// order that records, a page at a time, the wish for each device's `lang-<code>` (where it has none), for the
/// apply pass to call at FCM in its batches and within the shared rate like every other wish. The progress is in
/// the database (`LanguageRolloutDAO`), so whichever replica leads next continues it, and a finished walk never
/// runs again; a page recorded twice changes nothing (a recorded wish decides).
struct LanguageRolloutPass: Sendable {
    let progress: LanguageRolloutDAO
    let devices: DeviceDAO
    let subscriptions: SubscriptionDAO
    /// Wakes the apply pass once a page's wishes are recorded.
    let signal: WakeSignal
    /// How many devices one page reads.
    let page: Int
    /// Set once the walk is known to have finished: a fact of the database that never changes back, so this
    /// process stops asking.
    private let finished = Flag()

    init(
        progress: LanguageRolloutDAO, devices: DeviceDAO, subscriptions: SubscriptionDAO, signal: WakeSignal,
        page: Int
    ) {
        self.progress = progress
        self.devices = devices
        self.subscriptions = subscriptions
        self.signal = signal
        self.page = max(1, page)
    }

    /// Records the language wishes of one page of the registry and moves the walk past it (or ends it after the
    /// last); false when the walk has finished.
    /// - Throws: `DAOError`.
    @discardableResult
    func rollOutOnce() async throws -> Bool {
        guard !finished.isSet else { return false }
        let rollout = try await progress.current()
        guard !rollout.finished else {
            finished.set()
            return false
        }
        let devices = try await self.devices.activePage(after: rollout.after, limit: Int64(page))
        let wishes = devices.compactMap { device in
            LanguageTopic.topic(forLocale: device.locale).map { (device: device, topic: $0) }
        }
        try await subscriptions.wantNew(wishes)
        if let first = devices.first?.id, let last = devices.last?.id, !wishes.isEmpty {
            try await check(wishes, now: try await self.devices.range(from: first, through: last))
        }
        if devices.count < page {
            try await progress.finish(rollout)
            finished.set()
        } else if let last = devices.last?.id {
            _ = try await progress.advance(rollout, after: last)
        }
        if !wishes.isEmpty { signal.notify() }
        return true
    }

    /// Brings the wishes just recorded in line with what changed while the page was read: a device deleted, given
    /// a new registration or a new locale, or unregistered meanwhile. Each of those changes is written to the
    /// device before its wishes, and this reads the devices after recording, so a change it does not see finds
    /// the record already written and corrects it itself.
    private func check(_ wishes: [(device: Device, topic: String)], now: [ObjectID: Device]) async throws {
        for (read, topic) in wishes {
            let current = now[read.id]
            if let current, current.registration == read.registration, current.state == .active,
                LanguageTopic.topic(forLocale: current.locale) == topic
            {
                continue
            }
            if let current, current.registration == read.registration, current.state != .active {
                try await subscriptions.sleep(registration: current.registration)
                continue
            }
            // Whoever holds the registration now decides its language; with nobody, the wish goes.
            if let holder = try await devices.holder(of: read.registration), holder.state == .active {
                let device = try await devices.get(holder.id)
                try await subscriptions.setLanguage(LanguageTopic.topic(forLocale: device.locale), for: device)
            } else {
                try await subscriptions.remove(topic, registration: read.registration)
            }
            if let current, current.registration != read.registration, current.state == .active {
                try await subscriptions.setLanguage(LanguageTopic.topic(forLocale: current.locale), for: current)
            }
        }
    }
}

/// A flag that is set once and read from any task.
private final class Flag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() { value.withLock { $0 = true } }
}
