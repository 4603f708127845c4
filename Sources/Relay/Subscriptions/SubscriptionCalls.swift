import DAO
import FCM
import Logging
import Metrics
import Mongo
import Synchronization

/// The reconciler's calls to FCM's topic subscription API: each goes through the project's gate (back-pressure:
/// a 429, a 503 or a time-out pauses every call until `Retry-After`, then one call probes) and its answer is
/// sorted by the `OutcomeClassifier`. A call that failed is recorded for a retry; a registration FCM says is gone
/// marks its device unregistered and puts its subscriptions to sleep.
final class SubscriptionCalls: Sendable {
    /// Records a failed call for a retry at a time (Unix ms), with the error's name.
    typealias RetryRecord = @Sendable (TopicSubscription, Int64, String) async throws -> Void

    /// What became of one call.
    private enum Call {
        /// FCM has it as wanted.
        case applied(TopicSubscription)
        /// Failed, and recorded as a retry or a registration gone.
        case failed
        /// Not made: its window was nearly over.
        case notStarted(TopicSubscription)
    }

    private let fcm: any TopicSubscribing
    private let gate: RelayGate
    /// Spaces the calls at the rate, so that no sliding second holds more than it (the shared window holds each
    /// calendar second).
    private let spacer: CallSpacer
    private let classifier: OutcomeClassifier
    /// Where failed calls are recorded for a retry, and gone registrations marked.
    private let subscriptions: SubscriptionDAO, devices: DeviceDAO
    /// Backoff for retryable failures.
    private let retryPolicy: RetryPolicy
    /// Calls in flight at once in this process.
    private let concurrency: Int
    /// The longest one wait for a pause to end lasts, so the leader renews its lease meanwhile.
    private let longestWait: Duration
    private let logger: Logger
    private let now: UnixClock
    /// The end of the last pause logged (Unix ms).
    private let loggedPauseEnd = Mutex<Int64>(0)

    init(
        fcm: any TopicSubscribing, subscriptions: SubscriptionDAO, devices: DeviceDAO, retryPolicy: RetryPolicy,
        rate: Int, concurrency: Int, longestWait: Duration, logger: Logger, now: @escaping UnixClock
    ) {
        self.spacer = CallSpacer(limit: rate, now: now)
        self.fcm = fcm
        // Only the leader calls FCM, so the pause need not be shared: a new leader learns of it from its first call.
        self.gate = RelayGate(concurrency: concurrency, now: now)
        self.classifier = OutcomeClassifier(gate: gate)
        self.subscriptions = subscriptions
        self.devices = devices
        self.retryPolicy = retryPolicy
        self.concurrency = concurrency
        self.longestWait = longestWait
        self.logger = logger
        self.now = now
    }

    /// Sleeps through a pause FCM asked for, `longestWait` at most at a time; true when calls may go (perhaps a
    /// probe first).
    func waitOutPause() async -> Bool {
        guard let pause = gate.pause() else { return true }
        try? await Task.sleep(for: min(pause, longestWait))
        return gate.pause() == nil
    }

    /// Calls FCM for `slice`, `concurrency` calls at a time, none after `deadline` (Unix ms): returns those FCM
    /// now has as wanted, and those not called; those that failed are recorded through `retry`.
    func apply(_ slice: ArraySlice<TopicSubscription>, startingBefore deadline: Int64, retry: @escaping RetryRecord)
        async -> (applied: [TopicSubscription], notStarted: [TopicSubscription])
    {
        await withTaskGroup(of: Call.self) { group in
            var running = 0, applied: [TopicSubscription] = [], notStarted: [TopicSubscription] = []
            func collect(_ call: Call) {
                switch call {
                case .applied(let subscription): applied.append(subscription)
                case .notStarted(let subscription): notStarted.append(subscription)
                case .failed: break
                }
            }
            for subscription in slice {
                if running >= concurrency, let done = await group.next() {
                    collect(done)
                    running -= 1
                }
                group.addTask {
                    guard self.now() < deadline else { return .notStarted(subscription) }
                    return await self.apply(subscription, startingBefore: deadline, retry: retry)
                }
                running += 1
            }
            for await done in group { collect(done) }
            return (applied, notStarted)
        }
    }

    /// Calls FCM for one subscription once the gate lets it, before `deadline` (Unix ms): `.applied` when FCM has
    /// it as wanted (recorded with its slice by the caller), `.failed` when it failed (recorded here: through
    /// `retry`, or its registration gone), `.notStarted` when the gate stayed closed or the deadline passed.
    private func apply(_ subscription: TopicSubscription, startingBefore deadline: Int64, retry: RetryRecord) async
        -> Call
    {
        // Unwanted and never applied (a gone wish FCM does not have): nothing to call, only to record.
        if !subscription.want, !subscription.applied { return .applied(subscription) }
        guard (try? await spacer.wait()) != nil, now() < deadline else { return .notStarted(subscription) }
        guard let ticket = await gate.admit(notAfter: deadline) else { return .notStarted(subscription) }
        guard now() < deadline else {
            gate.abandon(ticket)
            return .notStarted(subscription)
        }
        let operation = subscription.want ? "subscribe" : "unsubscribe"
        let answer: Result<FCMTopicSubscriptions.Outcome, FCMError>
        do {
            answer = .success(
                subscription.want
                    ? try await fcm.subscribe(registration: subscription.registration, topic: subscription.topic)
                    : try await fcm.unsubscribe(registration: subscription.registration, topic: subscription.topic))
        } catch let error as FCMError {
            answer = .failure(error)
        } catch {
            gate.abandon(ticket)
            logger.warning("applying a subscription failed", metadata: ["error": "\(error)"])
            try? await retry(subscription, now() + retryPolicy.base.milliseconds, "transport")
            return .failed
        }
        switch classifier.classify(answer, of: ticket) {
        case .sent(let outcome):
            Self.count(operation, outcome == .applied ? "applied" : "already")
            return .applied(subscription)
        case .unregistered:
            Self.count(operation, "unregistered")
            // Logged by device, never by registration: a registration token is a credential.
            logger.info(
                "FCM says a registration is gone; its device is marked unregistered",
                metadata: ["device": "\(subscription.device.hex)"])
            do {
                try await registrationGone(subscription.registration)
            } catch {
                logger.warning("marking a device unregistered failed", metadata: ["error": "\(error)"])
            }
        case .retryAfter(let error, let pauseEnd):
            Self.count(operation, error.isRetryable ? "retried" : "failed")
            // FCM overloaded: every call of the project waits, and this one is due when the pause ends.
            if let pauseEnd {
                logPause(until: pauseEnd, error: error)
                try? await retry(subscription, pauseEnd, "\(error.code)")
            } else {
                let delay = retryPolicy.delay(afterAttempt: Int64(subscription.attempts + 1), error: error)
                try? await retry(subscription, now() + delay.milliseconds, "\(error.code)")
            }
        case .failed(let error):
            Self.count(operation, "failed")
            try? await retry(subscription, now() + retryPolicy.cap.milliseconds, "\(error.code)")
        }
        return .failed
    }

    /// FCM's list of `registration`'s topics, within the shared rate; a pause FCM asks for is waited out and the
    /// list asked for again, so an overloaded FCM slows the caller down instead of ending it.
    /// - Throws: `FCMError` other than a pause; `DAOError`; `CancellationError`.
    func topics(of registration: String, pacedBy rate: RateWindow) async throws -> [String] {
        while true {
            guard let ticket = await gate.admit() else { throw CancellationError() }
            do {
                _ = try await rate.take(1)
                try await spacer.wait()
            } catch {
                gate.abandon(ticket)
                throw error
            }
            let answer: Result<[String], FCMError>
            do {
                answer = .success(try await fcm.topics(of: registration))
            } catch let error as FCMError {
                answer = .failure(error)
            } catch {
                gate.abandon(ticket)
                throw error
            }
            switch classifier.classify(answer, of: ticket) {
            case .sent(let topics):
                return topics
            case .retryAfter(let error, let pauseEnd?):
                logPause(until: pauseEnd, error: error)
            case .retryAfter(let error, nil), .failed(let error), .unregistered(let error):
                throw error
            }
        }
    }

    /// FCM says `registration` is gone: its device is marked unregistered and its subscriptions sleep.
    /// - Throws: `DAOError`.
    func registrationGone(_ registration: String) async throws {
        try await devices.markUnregistered(registration: registration)
        try await subscriptions.sleep(registration: registration)
    }

    /// Counts a subscription call by operation and outcome.
    private static func count(_ operation: String, _ outcome: String) {
        Counter(
            label: "msi_subscription_operations_total", dimensions: [("operation", operation), ("outcome", outcome)]
        )
        .increment()
    }

    /// Counts and logs a pause of the project's subscription calls, once however many calls in flight FCM
    /// refused with it.
    private func logPause(until: Int64, error: FCMError) {
        let current = now()
        let isNew = loggedPauseEnd.withLock { end in
            defer { end = max(end, until) }
            return end <= current
        }
        guard isNew else { return }
        Counter(label: "msi_subscription_pauses_total", dimensions: [("reason", "\(error.code)")]).increment()
        logger.warning(
            "FCM asked for a pause: no subscription calls until it ends",
            metadata: ["reason": "\(error.code)", "seconds": "\(max(until - current, 0) / 1000)"])
    }
}
