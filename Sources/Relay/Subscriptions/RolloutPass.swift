import DAO
import Mongo

/// Rolls out a subject every registered device should receive, at FCM's pace. The calls go out first, a page of
/// the registry at a time and within the shared rate, and their records follow in inserts behind them, while the
/// next page is already being called; the rollout moves on (`RolloutDAO.advance`) only once a page is recorded and
/// checked, so a process that stops mid-page leaves the page to whoever leads next, who calls again what has no
/// record yet (FCM answers 409, counted as done).
struct RolloutPass: Sendable {
    /// The rollouts, the registry they page through, and the wishes they add.
    let rollouts: RolloutDAO, devices: DeviceDAO, subscriptions: SubscriptionDAO
    let calls: SubscriptionCalls
    let rate: RateWindow
    let leadership: Leadership
    /// Wakes the calls once a rollout ends or is discarded.
    let signal: WakeSignal
    /// How many devices one page reads (`RolloutDAO`).
    let rolloutPage: Int
    /// The most devices one pass reaches.
    let batchLimit: Int
    let now: UnixClock

    /// A page of a rollout whose calls went out: what its settling needs.
    struct RolloutPage: Sendable {
        var rollout: TopicRollout
        /// The page's first and last device; nil: the page was empty (the one after a full last page).
        var first: ObjectID?
        var last: ObjectID?
        /// Fewer devices than a page: the rollout's last.
        var isLast: Bool
        /// The calls made (each device of the page with no wish for the topic).
        var reached: [TopicSubscription]
        /// Writes the page's records; done once they are all written.
        var records: Task<Void, any Error>?
    }

    /// Ends a cancelled rollout once its topic is unwanted everywhere, or else takes the oldest rollout further,
    /// up to `batchLimit` devices (about ten seconds of calls, so the subscriptions that fall due meanwhile wait no
    /// longer); false when there is none.
    @discardableResult
    func rollOutOnce() async throws -> Bool {
        let all = try await rollouts.all()
        guard let rollout = all.first(where: \.cancelled) ?? all.first else { return false }
        if rollout.cancelled {
            try await subscriptions.removeTopics(prefix: rollout.topic, exact: true)
            try await rollouts.discard(rollout)
            signal.notify()
            return true
        }
        // Each page settles after the one before it, in a task of its own, while the next is called; and the
        // page after that is read meanwhile.
        var settling: Task<Void, any Error>?
        var reading: Task<DevicesToReach, any Error>?
        do {
            var read = 0
            var next = try await devicesToReach(by: rollout, after: rollout.after)
            while true {
                let current = next
                read += current.devices.count
                let more = current.devices.count >= rolloutPage && read < batchLimit
                // Read once the page's first calls are under way: a read started before them would hold up the
                // command that lets them go (on a server that runs one command at a time, as SecantusDB does).
                guard
                    let page = try await call(
                        current, of: rollout,
                        whenUnderWay: {
                            if more, reading == nil, let last = current.devices.last?.id {
                                reading = Task { try await devicesToReach(by: rollout, after: last) }
                            }
                        })
                else { break }
                let previous = settling
                settling = Task {
                    _ = try await previous?.value
                    try await settle(page)
                }
                guard more, let following = reading else { break }
                next = try await following.value
                reading = nil
            }
        } catch {
            reading?.cancel()
            try? await settling?.value
            throw error
        }
        reading?.cancel()
        try await settling?.value
        signal.notify()
        return true
    }

    /// A page of the registry and the registrations that have a wish for the rollout's topic, read at `since`.
    struct DevicesToReach: Sendable {
        var devices: [Device]
        var wishing: Set<String>
        var since: Int64
    }

    /// Reads the page of active devices after `after`, and who has a wish for the rollout's topic already.
    private func devicesToReach(by rollout: TopicRollout, after: ObjectID?) async throws -> DevicesToReach {
        let devices = try await self.devices.activePage(after: after, limit: Int64(max(1, rolloutPage)))
        let since = now()
        guard let first = devices.first?.id, let last = devices.last?.id else {
            return DevicesToReach(devices: [], wishing: [], since: since)
        }
        let wishing = try await subscriptions.registrations(wishing: rollout.topic, devices: first, through: last)
        return DevicesToReach(devices: devices, wishing: wishing, since: since)
    }

    /// Calls FCM for every device of a page that has no wish for the rollout's topic (an opt-out, a device that
    /// registered meanwhile and wants it already); nil when this process stopped leading before every call went
    /// out.
    private func call(_ read: DevicesToReach, of rollout: TopicRollout, whenUnderWay: () -> Void) async throws
        -> RolloutPage?
    {
        defer { whenUnderWay() }
        let page = read.devices, since = read.since
        guard !page.isEmpty else {
            return RolloutPage(rollout: rollout, first: nil, last: nil, isLast: true, reached: [], records: nil)
        }
        let reached = page.filter { !read.wishing.contains($0.registration) }.map {
            TopicSubscription(rolling: rollout.topic, to: $0)
        }
        var remaining = reached[...]
        // Each slice's records are written after the previous slice's, in a task of their own: once FCM has
        // them they are written even if this process stops leading.
        var records: Task<Void, any Error>?
        while !remaining.isEmpty, !Task.isCancelled, try await leadership.lead() {
            guard await calls.waitOutPause() else { continue }
            // A second's allowance at a time: the database, busy writing the records of the calls before, is asked
            // once a second, not once a slice.
            let granted = try await rate.take(remaining.count)
            whenUnderWay()
            let made = await calls.apply(remaining.prefix(granted.count), startingBefore: granted.deadline) {
                try await subscriptions.wantLater($0, at: $1, error: $2)
            }
            let previous = records
            records = Task {
                _ = try await previous?.value
                try await subscriptions.rolledOut(made.applied, since: since)
            }
            remaining = remaining.dropFirst(granted.count)
            if !made.notStarted.isEmpty { remaining = (made.notStarted + remaining)[...] }
        }
        guard remaining.isEmpty else {
            try await records?.value
            return nil
        }
        return RolloutPage(
            rollout: rollout, first: page.first?.id, last: page.last?.id,
            isLast: page.count < rolloutPage, reached: reached, records: records)
    }

    /// Once a page's records are written: checks them against what changed while it was called, then moves the
    /// rollout past the page (or ends it after its last).
    private func settle(_ page: RolloutPage) async throws {
        try await page.records?.value
        try await check(page)
        if page.isLast {
            try await rollouts.finish(page.rollout)
        } else if let last = page.last {
            _ = try await rollouts.advance(page.rollout, after: last)
        }
    }

    /// Brings the records of a page just rolled out in line with what changed while it was called: a device
    /// deleted, or given a new registration, has the topic taken away from the registration called; a device
    /// FCM called gone sleeps; a subject deleted meanwhile is unwanted everywhere. Each of those changes is made
    /// before the check reads (device first, wishes after), so one that the check does not see finds the records
    /// it must change already written.
    private func check(_ page: RolloutPage) async throws {
        if let first = page.first, let last = page.last, !page.reached.isEmpty {
            try await check(page.reached, now: try await devices.range(from: first, through: last))
        }
        if try await rollouts.current(page.rollout)?.cancelled == true {
            try await subscriptions.removeTopics(prefix: page.rollout.topic, exact: true)
        }
    }

    private func check(_ reached: [TopicSubscription], now: [ObjectID: Device]) async throws {
        for subscription in reached {
            guard let device = now[subscription.device] else {
                try await subscriptions.remove(subscription.topic, registration: subscription.registration)
                continue
            }
            if device.registration != subscription.registration {
                try await subscriptions.remove(subscription.topic, registration: subscription.registration)
                if device.state == .active { try await subscriptions.wantNew([subscription.topic], for: device) }
            } else if device.state != .active {
                try await subscriptions.sleep(registration: device.registration)
            }
        }
    }
}
