import Foundation

/// The topic subscription API, registrations that are gone, and the simulated phones' inboxes.
extension FakeFCM {
    /// Makes the next `count` subscription calls that carry a valid token fail with `status` (429, 500, 503,
    /// 400, 403, 404) and an FCM-shaped error body, with `Retry-After: retryAfter` when given. Sends are not
    /// affected (`failNext` is theirs).
    public func failNextSubscriptionCalls(_ count: Int, status: Int, retryAfter: String? = nil) {
        state.withState {
            $0.subscriptionFailures = FakeFCMState.InjectedFailure(
                remaining: count, status: status, retryAfter: retryAfter)
        }
    }

    /// Makes every subscription call that carries a valid token fail with `status` and `Retry-After: retryAfter`
    /// for the next `duration`: an outage of the topic subscription API. Sends are not affected (`failFor` is
    /// theirs).
    public func failSubscriptionCalls(for duration: Duration, status: Int, retryAfter: String? = nil) {
        state.withState { $0.subscriptionOutage = (Date(after: duration), status, retryAfter) }
    }

    /// Makes `registration` gone, as when its app is uninstalled: its subscription calls and sends to it as a
    /// `token` answer 404 with the `UNREGISTERED` detail. Its subscriptions stay, as the fake saw them.
    public func markUnregistered(_ registration: String) {
        state.withState { _ = $0.unregistered.insert(registration) }
    }

    /// The topics `registration` is subscribed to.
    public func subscriptions(of registration: String) -> Set<String> {
        state.withState { Set(($0.subscriptions[registration] ?? [:]).keys) }
    }

    /// The registrations subscribed to `topic`.
    public func subscribers(of topic: String) -> Set<String> {
        state.withState { $0.subscribers[topic] ?? [] }
    }

    /// The `lang-` topics `registration` is subscribed to: the language topic the hub keeps for its locale (one at
    /// most, once the hub's subscription calls are done).
    public func languageTopics(of registration: String) -> Set<String> {
        subscriptions(of: registration).filter { $0.hasPrefix("lang-") }
    }

    /// The registrations a message sent to `condition` (`'T' in topics && 'lang-hi' in topics`) would reach now:
    /// those whose subscriptions satisfy it, as a condition send delivers; nil when FCM would refuse the condition.
    public func registrations(reachedBy condition: String) -> Set<String>? {
        guard case .success(let parsed) = FakeFCMCondition.parse(condition) else { return nil }
        return state.withState { state in
            Set(state.subscriptions.filter { parsed.matches(Set($0.value.keys)) }.keys)
        }
    }

    /// Subscribes `registration` to `topic` without a call, as if someone else had: drift for tests.
    public func forceSubscribe(_ registration: String, to topic: String) {
        state.withState { _ = $0.subscribe(registration, to: topic, at: Date()) }
    }

    /// Unsubscribes `registration` from `topic` without a call, as if someone else had: drift for tests.
    public func forceUnsubscribe(_ registration: String, from topic: String) {
        state.withState { _ = $0.unsubscribe(registration, from: topic) }
    }

    /// Every subscription call so far (create, delete, list), whatever the answer.
    public var subscriptionCallCount: Int { state.withState { $0.subscriptionCalls } }

    /// Subscription calls by the Unix second they arrived in (whatever the answer), to check a rate cap.
    public var subscriptionCallsPerSecond: [Int64: Int] { state.withState { $0.subscriptionCallsPerSecond } }

    /// The most subscription calls that arrived within any one second (a sliding second, not a Unix second).
    public var mostSubscriptionCallsInAnySecond: Int {
        let times = state.withState { $0.subscriptionCallTimes }
        var most = 0, first = 0
        for (index, time) in times.enumerated() {
            while times[first] <= time.addingTimeInterval(-1) { first += 1 }
            most = max(most, index - first + 1)
        }
        return most
    }

    /// Removes and returns the messages delivered to `registration` so far, oldest first: what its phone
    /// would have received.
    public func drainInbox(_ registration: String) -> [FakeFCMDelivery] {
        state.drainInbox(registration)
    }
}
