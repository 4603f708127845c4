import DAO
import FCM
import Logging
import Mongo

/// Applies the subscriptions the database wants at FCM, on the outbox's principles: the loops that join the
/// reconciler's parts, each with one job.
///
/// One replica at a time applies, while it holds the project's lease (`Leadership`), so none applies a
/// subscription twice at once. The calls (`SubscriptionCalls`) go through a gate that pauses every call of the
/// project when FCM is overloaded (a 429, a 503 or a time-out, until `Retry-After`, then one call probes), retry
/// with backoff and `Retry-After`, and count 409 on create or 404 on delete as done
/// (`FCMTopicSubscriptions.Outcome.alreadyApplied`); a rate cap per project is shared by every replica
/// (`RateWindow`). FCM saying a registration is gone marks its device unregistered and puts its subscriptions to
/// sleep. Due subscriptions are applied in batches (`ApplyPass`); a subject every device should receive is rolled
/// out by the same leader, at the same rate (`RolloutPass`); the devices registered before the hub owned language
/// topics get theirs from a one-time walk that records their wishes for the apply pass (`LanguageRolloutPass`).
/// A periodic pass lists what FCM has for each device and
/// repairs drift (`RepairPass`); it also removes devices unregistered for longer than the retention
/// (`RetentionPurge`).
public final class SubscriptionReconciler: Sendable {
    /// How the reconciler batches, paces and retries.
    public struct Configuration: Sendable {
        /// Subscription calls per second, all replicas together (`FCM_SUBSCRIPTION_RATE`).
        public var rate: Int
        /// Calls in flight at once in this process.
        public var concurrency: Int
        /// The most due subscriptions one batch reads, about ten seconds of calls at Google's rate: finding them
        /// costs a server that reads every match before the limit (SecantusDB) as much for 30,000 as for 50, and
        /// stalls its other commands meanwhile, so large batches make a large backlog cheaper.
        public var batchLimit: Int
        /// How many applied subscriptions may wait for their record before the calls wait for the database
        /// (`SubscriptionRecorder`); about ten seconds of calls at Google's rate.
        public var unrecordedLimit: Int
        /// How long a record waits for others to share its write.
        public var recordWindow: Duration
        /// How long the project's lease lasts unless renewed (every third of it): how soon another replica takes
        /// over from one that stopped.
        public var lease: Duration
        /// How many devices one page of a rollout reads (`RolloutDAO`): the calls of a page go out before its
        /// records are in, and the rollout moves on once they are.
        public var rolloutPage: Int
        /// Backoff for retryable failures.
        public var retry: RetryPolicy
        /// How often every device's subscriptions are compared with FCM's list; nil: never.
        public var repairInterval: Duration?
        /// How long an unregistered device is kept before it is removed.
        public var retention: Duration

        public init(
            rate: Int = 3_000, concurrency: Int = 32, batchLimit: Int = 30_000, unrecordedLimit: Int = 30_000,
            recordWindow: Duration = .milliseconds(20), lease: Duration = .seconds(30), rolloutPage: Int = 5_000,
            retry: RetryPolicy = RetryPolicy(quotaPause: nil), repairInterval: Duration? = .seconds(24 * 3600),
            retention: Duration = .seconds(30 * 24 * 3600)
        ) {
            self.rate = rate
            self.concurrency = concurrency
            self.batchLimit = batchLimit
            self.unrecordedLimit = unrecordedLimit
            self.recordWindow = recordWindow
            self.lease = lease
            self.rolloutPage = rolloutPage
            self.retry = retry
            self.repairInterval = repairInterval
            self.retention = retention
        }
    }

    /// The Forced and Recommended topics of the cube, for the repair pass.
    public typealias Wishes = @Sendable () async throws -> (forced: [String], recommended: [String])

    let configuration: Configuration
    private let logger: Logger
    /// Writes what FCM has behind the calls.
    private let recorder: SubscriptionRecorder
    private let leadership: Leadership
    private let signal: WakeSignal
    private let apply: ApplyPass
    private let rollout: RolloutPass
    private let languages: LanguageRolloutPass
    private let repair: RepairPass

    /// The reconciler of `project`'s subscriptions; `now` is the clock its leases, rate window, calls, rollouts and
    /// retention read (Unix ms), the wall clock unless a test moves it.
    public init(
        subscriptions: SubscriptionDAO, devices: DeviceDAO, rollouts: RolloutDAO, rates: RateWindowDAO,
        leases: LeaseDAO, fcm: any TopicSubscribing, project: String, signal: WakeSignal,
        wishes: @escaping Wishes, configuration: Configuration, logger: Logger,
        now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        self.configuration = configuration
        self.logger = logger
        self.signal = signal
        let recorder = SubscriptionRecorder(
            subscriptions: subscriptions, window: configuration.recordWindow,
            capacity: configuration.unrecordedLimit, logger: logger)
        self.recorder = recorder
        // The key of the project's shared rate window and of its lease.
        let projectKey = "fcm-subscriptions:\(project)"
        // Another process may lead and change FCM meanwhile: only the database tells what FCM has.
        let leadership = Leadership(
            key: projectKey, owner: "reconciler-" + ObjectID().hex, leases: leases, lease: configuration.lease,
            now: now,
            notLeading: { recorder.forget() })
        self.leadership = leadership
        let calls = SubscriptionCalls(
            fcm: fcm, subscriptions: subscriptions, devices: devices,
            retryPolicy: configuration.retry, rate: configuration.rate, concurrency: configuration.concurrency,
            longestWait: configuration.lease / 3, logger: logger, now: now)
        let rate = RateWindow(rates: rates, key: projectKey, limit: configuration.rate, now: now)
        self.apply = ApplyPass(
            subscriptions: subscriptions, recorder: recorder, calls: calls, rate: rate,
            leadership: leadership, signal: signal, batchLimit: configuration.batchLimit,
            longestWait: configuration.lease / 3)
        self.rollout = RolloutPass(
            rollouts: rollouts, devices: devices, subscriptions: subscriptions, calls: calls,
            rate: rate, leadership: leadership, signal: signal,
            rolloutPage: configuration.rolloutPage, batchLimit: configuration.batchLimit, now: now)
        self.languages = LanguageRolloutPass(
            progress: rollouts.languages, devices: devices, subscriptions: subscriptions,
            signal: signal, page: configuration.rolloutPage)
        self.repair = RepairPass(
            wishes: wishes, devices: devices, subscriptions: subscriptions, calls: calls, rate: rate,
            purge: RetentionPurge(
                devices: devices, subscriptions: subscriptions,
                retention: configuration.retention, now: now),
            signal: signal)
    }

    /// Applies pending subscriptions while this process holds the project's lease, until cancelled (then writes
    /// the records still held, for at most `recordDrainTime`, and gives the lease up); the periodic repair runs
    /// beside it.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.applyLoop() }
            if let interval = configuration.repairInterval {
                group.addTask { await self.repairLoop(every: interval) }
            }
        }
        // Not cancelled with the loops: the records are written while the database is still open.
        await Task { [recorder] in await recorder.drain(timeout: Self.recordDrainTime) }.value
        await leadership.resign(logger: logger)
    }

    /// How long a stopping reconciler goes on writing what FCM has: what it leaves unwritten, whoever leads next
    /// applies again.
    static let recordDrainTime = Duration.seconds(10)

    /// Reads one batch of due subscriptions and applies it within the shared rate, a slice at a time, while this
    /// process holds the lease; the records follow (`SubscriptionRecorder`). Returns how many subscriptions it
    /// read.
    @discardableResult
    public func applyOnce() async throws -> Int {
        try await apply.applyOnce()
    }

    /// Ends a cancelled rollout once its topic is unwanted everywhere, or else takes the oldest rollout further,
    /// up to `batchLimit` devices (about ten seconds of calls, so the subscriptions that fall due meanwhile wait no
    /// longer); false when there is none.
    @discardableResult
    public func rollOutOnce() async throws -> Bool {
        try await rollout.rollOutOnce()
    }

    /// Records the language wishes of one page of the registry for the one-time language rollout; false once it
    /// has finished.
    @discardableResult
    public func rollOutLanguagesOnce() async throws -> Bool {
        try await languages.rollOutOnce()
    }

    /// One pass over every active device: its wishes brought in line with the cube, FCM's list compared with what
    /// the hub recorded (drift becomes pending work), paced by the shared rate; then devices unregistered for
    /// longer than the retention are removed.
    public func repairAll() async throws {
        try await repair.repairAll()
    }

    private func applyLoop() async {
        var backoff = Backoff(first: .milliseconds(200), cap: .seconds(5))
        while !Task.isCancelled {
            do {
                guard try await leadership.lead() else {
                    // Another replica applies; this one takes over within a third of a lease if it stops.
                    try? await Task.sleep(for: configuration.lease / 3)
                    continue
                }
                let applied = try await apply.applyOnce()
                var worked = applied > 0
                if try await leadership.lead() { worked = try await rollout.rollOutOnce() || worked }
                // The language walk's pages only when nothing else is due: each becomes one batch of the apply
                // pass, never a backlog ahead of the wishes of devices registering now.
                if applied == 0, try await leadership.lead() { worked = try await languages.rollOutOnce() || worked }
                backoff.reset()
                if !worked { await signal.wait(timeout: .milliseconds(500)) }
            } catch {
                if Task.isCancelled { return }
                logger.warning("applying subscriptions failed; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: backoff.next())
            }
        }
    }

    private func repairLoop(every interval: Duration) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            do { if try await leadership.lead() { try await repair.repairAll() } } catch {
                if Task.isCancelled { return }
                logger.warning("the subscription repair pass failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
