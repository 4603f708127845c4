import DAO
import FCM
import Foundation
import Logging
import Metrics
import Mongo
import Synchronization

/// Applies the subscriptions the database wants at FCM, on the outbox's principles: one lease per FCM project
/// (`LeaseDAO`), so one replica at a time applies and none applies a subscription twice at once; retries with
/// backoff and `Retry-After` on 5xx and time-outs; back-pressure when FCM is overloaded (a 429, a 503 or a
/// time-out pauses every call of the project until `Retry-After`, then one call probes, as the outbox's
/// `RelayGate` does for sends); a rate cap per project shared by every replica
/// (`RateWindowDAO`); and 409 on create or 404 on delete counted as done
/// (`FCMTopicSubscriptions.Outcome.alreadyApplied`). FCM saying a registration is gone marks its device
/// unregistered and puts its subscriptions to sleep. A subject every device should receive is rolled out by the
/// same leader, at the same rate (`rollOutOnce`, in `SubscriptionReconciler+Rollout.swift`). A periodic pass lists what FCM has for each device and
/// repairs drift; it also removes devices unregistered for longer than the retention.
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

        public init(rate: Int = 3_000, concurrency: Int = 32, batchLimit: Int = 30_000, unrecordedLimit: Int = 30_000,
                    recordWindow: Duration = .milliseconds(20), lease: Duration = .seconds(30), rolloutPage: Int = 5_000,
                    retry: RetryPolicy = RetryPolicy(quotaPause: nil), repairInterval: Duration? = .seconds(24 * 3600),
                    retention: Duration = .seconds(30 * 24 * 3600)) {
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

    let subscriptions: SubscriptionDAO
    let devices: DeviceDAO
    let rollouts: RolloutDAO
    private let rates: RateWindowDAO
    private let leases: LeaseDAO
    /// Writes what FCM has behind the calls.
    private let recorder: SubscriptionRecorder
    /// Back-pressure: closed for the project while FCM asks for a pause. Only the leader calls FCM, so the pause
    /// need not be shared: a new leader learns of it from its first call.
    private let gate: RelayGate
    /// The end of the last pause logged (Unix ms).
    private let loggedPauseEnd = Mutex<Int64>(0)
    private let fcm: any TopicSubscribing
    let signal: WakeSignal
    private let wishes: Wishes
    let configuration: Configuration
    private let logger: Logger
    /// This process's name in leases.
    private let owner = "reconciler-" + ObjectID().hex
    /// The key of the project's shared rate window and of its lease.
    private let projectKey: String
    /// Until when (Unix ms) this process holds the lease, as last confirmed; 0 when it does not.
    private let leadership = Mutex<Int64>(0)

    public init(subscriptions: SubscriptionDAO, devices: DeviceDAO, rollouts: RolloutDAO, rates: RateWindowDAO,
                leases: LeaseDAO, fcm: any TopicSubscribing, project: String, signal: WakeSignal,
                wishes: @escaping Wishes, configuration: Configuration, logger: Logger) {
        self.subscriptions = subscriptions
        self.devices = devices
        self.rollouts = rollouts
        self.rates = rates
        self.leases = leases
        self.recorder = SubscriptionRecorder(subscriptions: subscriptions, window: configuration.recordWindow,
                                             capacity: configuration.unrecordedLimit, logger: logger)
        self.gate = RelayGate(concurrency: configuration.concurrency, now: UnixTime.nowMilliseconds)
        self.fcm = fcm
        self.signal = signal
        self.wishes = wishes
        self.configuration = configuration
        self.logger = logger
        self.projectKey = "fcm-subscriptions:\(project)"
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
        if leadership.withLock({ $0 }) > 0 { try? await leases.release(projectKey, owner: owner) }
    }

    /// How long a stopping reconciler goes on writing what FCM has: what it leaves unwritten, whoever leads next
    /// applies again.
    static let recordDrainTime = Duration.seconds(10)

    // MARK: Leading

    /// Whether this process holds the project's lease for at least two thirds of a lease more, renewing it (or
    /// taking it when free) otherwise.
    func lead() async throws -> Bool {
        let leaseMS = configuration.lease.milliseconds
        if leadership.withLock({ $0 }) - UnixTime.nowMilliseconds() > leaseMS * 2 / 3 { return true }
        let until = try await leases.hold(projectKey, owner: owner, leaseMS: leaseMS)
        leadership.withLock { $0 = until ?? 0 }
        // Another process may lead and change FCM meanwhile: only the database tells what FCM has.
        if until == nil { recorder.forget() }
        return until != nil
    }

    // MARK: Applying

    private func applyLoop() async {
        var backoff = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                guard try await lead() else {
                    // Another replica applies; this one takes over within a third of a lease if it stops.
                    try? await Task.sleep(for: configuration.lease / 3)
                    continue
                }
                var worked = try await applyOnce() > 0
                if try await lead() { worked = try await rollOutOnce() || worked }
                backoff = .milliseconds(200)
                if !worked { await signal.wait(timeout: .milliseconds(500)) }
            } catch {
                if Task.isCancelled { return }
                logger.warning("applying subscriptions failed; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// How many subscriptions of a batch are called at once: the records handed to the recorder together.
    static let slice = 256

    /// Reads one batch of due subscriptions and applies it within the shared rate, a slice at a time, while this
    /// process holds the lease; the records follow (`SubscriptionRecorder`). Returns how many subscriptions it
    /// read.
    @discardableResult
    public func applyOnce() async throws -> Int {
        let read = try await readDue()
        let batch = recorder.work(in: read)
        if batch.isEmpty, !read.isEmpty {
            // All that is due waits for its record: nothing to call until those are written or new work comes.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.recorder.drain(timeout: self.configuration.lease / 3) }
                group.addTask { await self.signal.wait(timeout: self.configuration.lease / 3) }
                await group.next()
                group.cancelAll()
            }
            return read.count
        }
        var remaining = batch[...]
        while !remaining.isEmpty, !Task.isCancelled, try await lead() {
            guard await waitOutPause() else { continue }
            await recorder.waitForRoom()
            // Only what the batch holds is taken from the shared allowance, so an idle replica spends none; up to a
            // second's at a time, so the database, busy with the records, is asked once a second, not once a slice.
            let (granted, windowEnd) = try await takeRate(min(remaining.count, max(configuration.rate, 1)))
            var grant = remaining.prefix(granted), late: [TopicSubscription] = []
            remaining = remaining.dropFirst(granted)
            while !grant.isEmpty {
                let calls = await apply(grant.prefix(Self.slice), startingBefore: windowEnd - Self.windowMargin) {
                    try await self.subscriptions.retry($0, at: $1, error: $2)
                }
                recorder.record(calls.applied)
                late += calls.notStarted
                grant = grant.dropFirst(Self.slice)
                if !grant.isEmpty { await recorder.waitForRoom() }
            }
            // Those whose share of the window ran out before their call went out come next, in a later window.
            if !late.isEmpty { remaining = (late + remaining)[...] }
        }
        return read.count
    }

    /// Up to `batchLimit` due subscriptions besides those whose records the recorder holds, which a read returns
    /// too: the read goes past them.
    private func readDue() async throws -> [TopicSubscription] {
        recorder.beginRead()
        return try await subscriptions.due(limit: max(1, configuration.batchLimit) + recorder.held)
    }

    /// How long before its window ends a call taken from it must have gone out: calls that reach FCM in the
    /// next second would count there.
    static let windowMargin: Int64 = 100

    /// Sleeps through a pause FCM asked for, a third of a lease at most at a time so the caller renews its lease
    /// meanwhile; true when calls may go (perhaps a probe first).
    func waitOutPause() async -> Bool {
        guard let pause = gate.pause() else { return true }
        try? await Task.sleep(for: min(pause, configuration.lease / 3))
        return gate.pause() == nil
    }

    /// Records a failed call for a retry at a time (Unix ms), with the error's name.
    typealias RetryRecord = @Sendable (TopicSubscription, Int64, String) async throws -> Void

    /// What became of a slice's calls.
    private enum Call {
        /// FCM has it as wanted.
        case applied(TopicSubscription)
        /// Failed, and recorded as a retry or a registration gone.
        case failed
        /// Not made: its window was nearly over.
        case notStarted(TopicSubscription)
    }

    /// Calls FCM for `slice`, `concurrency` calls at a time, none after `deadline` (Unix ms): returns those FCM
    /// now has as wanted, and those not called; those that failed are recorded through `retry`.
    func apply(_ slice: ArraySlice<TopicSubscription>, startingBefore deadline: Int64, retry: @escaping RetryRecord)
        async -> (applied: [TopicSubscription], notStarted: [TopicSubscription]) {
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
                if running >= configuration.concurrency, let done = await group.next() {
                    collect(done)
                    running -= 1
                }
                group.addTask {
                    guard UnixTime.nowMilliseconds() < deadline else { return .notStarted(subscription) }
                    return await self.apply(subscription, startingBefore: deadline, retry: retry)
                }
                running += 1
            }
            for await done in group { collect(done) }
            return (applied, notStarted)
        }
    }

    /// Takes up to `count` calls from this second's allowance, shared by every replica, waiting for the next
    /// second while the current one is spent (or nearly over, so calls made late do not land in the next
    /// second's count); returns how many, and when that second ends (Unix ms).
    func takeRate(_ count: Int) async throws -> (granted: Int, windowEnd: Int64) {
        while !Task.isCancelled {
            let now = UnixTime.nowMilliseconds()
            let windowEnd = (now / 1000 + 1) * 1000
            if windowEnd - now < Self.windowMargin {
                try await Task.sleep(for: .milliseconds(windowEnd - now + 1))
                continue
            }
            let (granted, next) = try await rates.take(count, of: projectKey, limit: configuration.rate, windowMS: 1000)
            if granted > 0 { return (granted, next) }
            try await Task.sleep(for: .milliseconds(max(1, next - UnixTime.nowMilliseconds() + 1)))
        }
        throw CancellationError()
    }

    /// Calls FCM for one subscription once the gate lets it, before `deadline` (Unix ms): `.applied` when FCM has
    /// it as wanted (recorded with its slice by the caller), `.failed` when it failed (recorded here: through
    /// `retry`, or its registration gone), `.notStarted` when the gate stayed closed or the deadline passed.
    private func apply(_ subscription: TopicSubscription, startingBefore deadline: Int64, retry: RetryRecord) async
        -> Call {
        // Unwanted and never applied (a gone wish FCM does not have): nothing to call, only to record.
        if !subscription.want, !subscription.applied { return .applied(subscription) }
        guard let ticket = await gate.admit(notAfter: deadline) else { return .notStarted(subscription) }
        guard UnixTime.nowMilliseconds() < deadline else {
            gate.abandon(ticket)
            return .notStarted(subscription)
        }
        let operation = subscription.want ? "subscribe" : "unsubscribe"
        do {
            let outcome = subscription.want
                ? try await fcm.subscribe(registration: subscription.registration, topic: subscription.topic)
                : try await fcm.unsubscribe(registration: subscription.registration, topic: subscription.topic)
            gate.succeeded(ticket)
            Counter(label: "msi_subscription_operations_total",
                    dimensions: [("operation", operation), ("outcome", outcome == .applied ? "applied" : "already")]).increment()
            return .applied(subscription)
        } catch let error as FCMError where error.code == .unregistered {
            gate.failed(ticket, error: error)
            Counter(label: "msi_subscription_operations_total", dimensions: [("operation", operation), ("outcome", "unregistered")])
                .increment()
            // Logged by device, never by registration: a registration token is a credential.
            logger.info("FCM says a registration is gone; its device is marked unregistered",
                        metadata: ["device": "\(subscription.device.hex)"])
            do {
                try await devices.markUnregistered(registration: subscription.registration)
                try await subscriptions.sleep(registration: subscription.registration)
            } catch {
                logger.warning("marking a device unregistered failed", metadata: ["error": "\(error)"])
            }
        } catch let error as FCMError {
            let retryable = error.isRetryable
            Counter(label: "msi_subscription_operations_total",
                    dimensions: [("operation", operation), ("outcome", retryable ? "retried" : "failed")]).increment()
            // FCM overloaded: every call of the project waits, and this one is due when the pause ends.
            if let pauseEnd = gate.failed(ticket, error: error) {
                logPause(until: pauseEnd, error: error)
                try? await retry(subscription, pauseEnd, "\(error.code)")
                return .failed
            }
            let delay = retryable ? configuration.retry.delay(afterAttempt: Int64(subscription.attempts + 1), error: error)
                : configuration.retry.cap
            try? await retry(subscription, UnixTime.nowMilliseconds() + delay.milliseconds, "\(error.code)")
        } catch {
            gate.abandon(ticket)
            logger.warning("applying a subscription failed", metadata: ["error": "\(error)"])
            try? await retry(subscription, UnixTime.nowMilliseconds() + configuration.retry.base.milliseconds, "transport")
        }
        return .failed
    }

    /// Counts and logs a pause of the project's subscription calls, once however many calls in flight FCM
    /// refused with it.
    private func logPause(until: Int64, error: FCMError) {
        let now = UnixTime.nowMilliseconds()
        let isNew = loggedPauseEnd.withLock { end in
            defer { end = max(end, until) }
            return end <= now
        }
        guard isNew else { return }
        Counter(label: "msi_subscription_pauses_total", dimensions: [("reason", "\(error.code)")]).increment()
        logger.warning("FCM asked for a pause: no subscription calls until it ends",
                       metadata: ["reason": "\(error.code)", "seconds": "\(max(until - now, 0) / 1000)"])
    }

    // MARK: Repair

    private func repairLoop(every interval: Duration) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            do { if try await lead() { try await repairAll() } } catch {
                if Task.isCancelled { return }
                logger.warning("the subscription repair pass failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// One pass over every active device: its wishes brought in line with the cube (every Forced and Recommended
    /// subject wanted, Forced ones always), FCM's list compared with what the hub recorded (drift becomes pending
    /// work), paced by the shared rate; then devices unregistered for longer than the retention are removed.
    public func repairAll() async throws {
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
        try await removeExpiredDevices()
        signal.notify()
    }

    private func repair(_ device: Device, levels: (forced: [String], recommended: [String])) async throws {
        try await subscriptions.wantNew(levels.forced + levels.recommended, for: device)
        try await subscriptions.set(want: true, topics: levels.forced, for: device)
        let atFCM: [String]
        do {
            atFCM = try await listedThroughGate(device.registration)
        } catch let error as FCMError where error.code == .unregistered {
            try await devices.markUnregistered(registration: device.registration)
            try await subscriptions.sleep(registration: device.registration)
            return
        }
        // Only the hub's own topics (channel-area-subject ids): what an app subscribed itself to stays its own.
        try await subscriptions.observed(registration: device.registration,
                                         topics: Set(atFCM.filter(Self.isTopicKey)), for: device)
    }

    /// FCM's list of `registration`'s topics, within the shared rate; a pause FCM asks for is waited out and the
    /// list asked for again, so an overloaded FCM slows the pass down instead of ending it.
    /// - Throws: `FCMError` other than a pause; `DAOError`; `CancellationError`.
    private func listedThroughGate(_ registration: String) async throws -> [String] {
        while true {
            guard let ticket = await gate.admit() else { throw CancellationError() }
            do {
                _ = try await takeRate(1)
            } catch {
                gate.abandon(ticket)
                throw error
            }
            do {
                let topics = try await fcm.topics(of: registration)
                gate.succeeded(ticket)
                return topics
            } catch let error as FCMError {
                guard let pauseEnd = gate.failed(ticket, error: error) else { throw error }
                logPause(until: pauseEnd, error: error)
            } catch {
                gate.abandon(ticket)
                throw error
            }
        }
    }

    private func removeExpiredDevices() async throws {
        let cutoff = UnixTime.nowMilliseconds() - configuration.retention.milliseconds
        for id in try await devices.unregistered(before: cutoff) {
            let device = try await devices.get(id)
            try await subscriptions.removeRegistration(device.registration)
            try await devices.delete(id)
        }
    }

    /// Whether `topic` has the form of a topic key: three 24-hex ids joined by "-".
    static func isTopicKey(_ topic: String) -> Bool {
        let parts = topic.split(separator: "-", omittingEmptySubsequences: false)
        return parts.count == 3 && parts.allSatisfy { $0.count == 24 && $0.allSatisfy(\.isHexDigit) }
    }
}
