import DAO
import Mongo

/// Rollouts: a subject every registered device should receive reaches them at FCM's pace. The calls go out
/// first, a page of the registry at a time and within the shared rate, and their records follow in inserts
/// behind them; the rollout moves on (`RolloutDAO.advance`) only once a page is recorded and checked, so a
/// process that stops mid-page leaves the page to whoever leads next, who calls again what has no record yet
/// (FCM answers 409, counted as done).
extension SubscriptionReconciler {
    /// Takes the oldest rollout a page further, or ends a cancelled one once its topic is unwanted everywhere;
    /// false when there is none.
    @discardableResult
    public func rollOutOnce() async throws -> Bool {
        guard let rollout = try await rollouts.all().first else { return false }
        if rollout.cancelled {
            try await subscriptions.removeTopics(prefix: rollout.topic, exact: true)
            try await rollouts.finish(rollout)
            signal.notify()
        } else {
            try await rollOutPage(of: rollout)
        }
        return true
    }

    /// Calls FCM for every active device of the rollout's next page that has no wish for its topic (an opt-out,
    /// a device that registered meanwhile and wants it already), records what FCM took, checks what changed
    /// meanwhile, and moves the rollout on; ends it after the last page.
    func rollOutPage(of rollout: TopicRollout) async throws {
        let page = try await devices.activePage(after: rollout.after, limit: Int64(max(1, configuration.rolloutPage)))
        guard let first = page.first, let last = page.last else {
            try await rollouts.finish(rollout)
            return
        }
        let since = UnixTime.nowMilliseconds()
        let wishing = try await subscriptions.registrations(wishing: rollout.topic)
        let reach = page.filter { !wishing.contains($0.registration) }.map { TopicSubscription(rolling: rollout.topic, to: $0) }
        var remaining = reach[...]
        // Each slice's records are written after the previous slice's, in a task of their own: once FCM has
        // them they are written even if this process stops leading.
        var records: Task<Void, any Error>?
        while !remaining.isEmpty, !Task.isCancelled, try await lead() {
            let (granted, windowEnd) = try await takeRate(min(remaining.count, Self.slice))
            let calls = await apply(remaining.prefix(granted), startingBefore: windowEnd - Self.windowMargin) {
                try await self.subscriptions.wantLater($0, at: $1, error: $2)
            }
            let previous = records, subscriptions = self.subscriptions
            records = Task {
                _ = try await previous?.value
                try await subscriptions.rolledOut(calls.applied, since: since)
            }
            remaining = remaining.dropFirst(granted)
            if !calls.notStarted.isEmpty { remaining = (calls.notStarted + remaining)[...] }
        }
        try await records?.value
        guard remaining.isEmpty else { return }
        try await check(reach, of: rollout, from: first.id, through: last.id)
        if page.count < configuration.rolloutPage {
            try await rollouts.finish(rollout)
        } else {
            _ = try await rollouts.advance(rollout, after: last.id)
        }
        signal.notify()
    }

    /// Brings the records of a page just rolled out in line with what changed while it was called: a device
    /// deleted, or given a new registration, has the topic taken away from the registration called; a device
    /// FCM called gone sleeps; a subject deleted meanwhile is unwanted everywhere. Each of those changes is made
    /// before the check reads (device first, wishes after), so one that the check does not see finds the records
    /// it must change already written.
    private func check(_ reached: [TopicSubscription], of rollout: TopicRollout, from first: ObjectID,
                       through last: ObjectID) async throws {
        let now = try await devices.range(from: first, through: last)
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
        if try await rollouts.current(rollout)?.cancelled == true {
            try await subscriptions.removeTopics(prefix: rollout.topic, exact: true)
        }
    }
}
