import DAO
import FCM
import Foundation
import Logging
import Mongo
import Synchronization

/// Relays what the outbox holds to FCM: claims due messages in batches under a lease, sends each
/// unsent component, and records the outcomes of a batch in one write.
///
/// One worker runs in each hub process; any number share a database, and a lease keeps them from
/// sending the same message at once. A message stored by this process wakes the worker at once
/// (`OutboxSignal`); messages stored elsewhere, retries and scheduled sends are found by polling.
/// Delivery is at least once: a process killed after FCM accepted a component but before the
/// outcome was written sends that component again when its lease runs out.
public final class OutboxWorker: Sendable {
    /// How the worker batches, leases and retries.
    public struct Configuration: Sendable {
        /// Messages claimed at once.
        public var batchSize: Int
        /// Batches being sent at once (their sends share the HTTP client's threads).
        public var batchesInFlight: Int
        /// How long a claim holds its messages; extended while a batch is still being sent.
        public var lease: Duration
        /// How often to look for due messages when nothing wakes the worker.
        public var pollInterval: Duration
        /// After a wake-up, how long to let more messages arrive so that one claim takes them all.
        public var linger: Duration
        /// Backoff for what FCM could not take yet.
        public var retry: RetryPolicy

        public init(batchSize: Int = 64, batchesInFlight: Int = 2, lease: Duration = .seconds(30),
                    pollInterval: Duration = .milliseconds(500), linger: Duration = .milliseconds(10),
                    retry: RetryPolicy = RetryPolicy()) {
            self.batchSize = max(batchSize, 1)
            self.batchesInFlight = max(batchesInFlight, 1)
            self.lease = lease
            self.pollInterval = pollInterval
            self.linger = linger
            self.retry = retry
        }
    }

    public let configuration: Configuration
    /// This worker's name in leases: host, process and a random part.
    public let owner: String
    private let outbox: OutboxDAO
    private let signal: OutboxSignal
    private let sender: any FCMSending
    private let mapping: FCMMappingOptions
    private let metrics: RelayMetrics
    private let logger: Logger
    private let now: @Sendable () -> Int64
    /// No claims before this time (Unix ms): FCM asked the whole project to slow down.
    private let pausedUntil = Mutex<Int64>(0)

    public init(
        outbox: OutboxDAO,
        signal: OutboxSignal,
        sender: any FCMSending,
        mapping: FCMMappingOptions = FCMMappingOptions(),
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "msi-hub.relay"),
        now: @escaping @Sendable () -> Int64 = UnixTime.nowMilliseconds
    ) {
        self.outbox = outbox
        self.signal = signal
        self.sender = sender
        self.mapping = mapping
        self.configuration = configuration
        self.metrics = RelayMetrics()
        self.logger = logger
        self.now = now
        self.owner = "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)/\(ObjectID().hex.suffix(8))"
    }

    private enum Event: Sendable {
        case batchDone
        case woke(notified: Bool)
    }

    /// Runs until the task is cancelled; then finishes the batches already claimed (their sends and
    /// outcomes) and returns.
    public func run() async {
        logger.info("relay worker started", metadata: ["owner": "\(owner)"])
        await withTaskGroup(of: Event.self) { group in
            var inFlight = 0
            var waiting = false
            var failures = 0
            while !Task.isCancelled {
                var claimedFull = false
                if inFlight < configuration.batchesInFlight, pause() == nil {
                    do {
                        if let batch = try await outbox.claim(owner: owner, now: now(),
                                                              leaseMS: configuration.lease.milliseconds,
                                                              limit: configuration.batchSize) {
                            metrics.claimed(batch.messages.count)
                            inFlight += 1
                            group.addTask { await self.send(batch); return .batchDone }
                            claimedFull = batch.messages.count >= configuration.batchSize
                        }
                        failures = 0
                    } catch {
                        failures += 1
                        if failures == 1 { logger.warning("claiming from the outbox failed", metadata: ["error": "\(error)"]) }
                    }
                }
                // A full batch suggests more are due: claim again at once if there is room.
                if claimedFull, inFlight < configuration.batchesInFlight { continue }
                if !waiting {
                    waiting = true
                    let timeout = waitTimeout(failures: failures)
                    group.addTask { .woke(notified: await self.signal.wait(timeout: timeout)) }
                }
                guard let event = await group.next() else { break }
                switch event {
                case .batchDone:
                    inFlight -= 1
                case .woke(let notified):
                    waiting = false
                    if notified, !Task.isCancelled { try? await Task.sleep(for: configuration.linger) }
                }
            }
            // Shutting down: claimed batches finish and record what they sent.
            while inFlight > 0, let event = await group.next() {
                if case .batchDone = event { inFlight -= 1 }
            }
        }
        logger.info("relay worker stopped", metadata: ["owner": "\(owner)"])
    }

    /// How long to wait for a wake-up: the poll interval, the rest of a pause, or a backoff after failures.
    private func waitTimeout(failures: Int) -> Duration {
        if let pause = pause() { return pause }
        guard failures > 0 else { return configuration.pollInterval }
        return min(configuration.pollInterval * (1 << min(failures, 5)), .seconds(10))
    }

    /// The rest of a pause FCM asked for, or nil.
    private func pause() -> Duration? {
        let remaining = pausedUntil.withLock { $0 } - now()
        return remaining > 0 ? .milliseconds(remaining) : nil
    }

    /// Sends a batch's messages concurrently, keeping the lease alive meanwhile, and records the outcomes.
    func send(_ batch: OutboxBatch) async {
        let keeper = Task { await keepLease(batch) }
        let outcomes = await withTaskGroup(of: RelayOutcome.self, returning: [RelayOutcome].self) { group in
            for message in batch.messages {
                group.addTask { await self.relay(message) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        keeper.cancel()
        await record(outcomes, lease: batch.lease)
    }

    /// Extends the lease every third of its length until cancelled.
    private func keepLease(_ batch: OutboxBatch) async {
        let interval = configuration.lease / 3
        while true {
            do { try await Task.sleep(for: interval) } catch { return }
            do {
                try await outbox.extend(batch, until: now() + configuration.lease.milliseconds)
            } catch {
                logger.warning("extending a relay lease failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes outcomes, retrying a failed write a few times while the lease still holds.
    private func record(_ outcomes: [RelayOutcome], lease: String) async {
        for attempt in 1...4 {
            do {
                let written = try await outbox.record(outcomes, lease: lease, now: now())
                if written < outcomes.count {
                    logger.warning("a relay lease ran out before its outcomes were written; others will resend",
                                   metadata: ["lease": "\(lease)", "lost": "\(outcomes.count - written)"])
                }
                metrics.recorded(outcomes)
                return
            } catch {
                logger.warning("recording relay outcomes failed", metadata: ["error": "\(error)", "attempt": "\(attempt)"])
                try? await Task.sleep(for: .milliseconds(250 << attempt))
            }
        }
    }

    /// Sends one message's unsent components and says where it goes next.
    func relay(_ message: Message) async -> RelayOutcome {
        let started = now()
        guard let state = RelayState(message: message.document),
              let distribution = RelayMessage.Distribution(rawValue: message.distribution) else {
            return RelayOutcome(id: message.id, status: .failed, lastError: "the message has no relay state or distribution")
        }
        let relayMessage = RelayMessage(
            msiKey: message.msiKey.hex, topicKey: message.topicKey, distribution: distribution,
            title: message.title, desc: message.desc, message: message.message, timestamp: message.timestamp,
            ttlSeconds: state.ttlSeconds, expiresAt: state.expiresAt)
        if relayMessage.isExpired(at: started) {
            return RelayOutcome(id: message.id, status: .expired, lastError: "the ttl ran out before the message was sent")
        }
        let unsent = Set(state.unsent)
        var results: [RelayComponent: RelayOutcome.ComponentResult] = [:]
        var retryable: FCMError?
        var permanent: FCMError?
        for request in FCMMapping.requests(for: relayMessage, options: mapping) {
            guard let component = RelayComponent(rawValue: request.component.rawValue), unsent.contains(component) else {
                continue
            }
            do {
                results[component] = .sent(name: try await sender.send(request))
                metrics.sent(component)
            } catch {
                let fcmError = error as? FCMError
                    ?? FCMError(code: .other, message: "\(error)", isRetryable: true)
                results[component] = .failed(error: fcmError.description, permanent: !fcmError.isRetryable)
                metrics.failed(component, retryable: fcmError.isRetryable)
                if fcmError.isRetryable {
                    // The rest waits for the retry, so the components keep their order.
                    retryable = fcmError
                    break
                }
                permanent = fcmError
            }
        }
        if let retryable {
            return retryOutcome(message, state: state, expiry: relayMessage.effectiveExpiry, error: retryable,
                                results: results)
        }
        let failedBefore = state.components.values.contains { $0.failed }
        if let permanent {
            logger.warning("FCM refused a message", metadata: ["msi_key": "\(message.msiKey)", "error": "\(permanent)"])
        }
        let failed = permanent != nil || failedBefore
        return RelayOutcome(id: message.id, status: failed ? .failed : .sent, components: results,
                            lastError: permanent?.description)
    }

    private func retryOutcome(_ message: Message, state: RelayState, expiry: Int64?, error: FCMError,
                              results: [RelayComponent: RelayOutcome.ComponentResult]) -> RelayOutcome {
        let current = now()
        let delay = configuration.retry.delay(afterAttempt: state.attempts, error: error)
        if let retryAfter = error.retryAfter {
            // FCM asked the project to wait: stop claiming until then.
            let until = current + retryAfter.milliseconds
            pausedUntil.withLock { $0 = max($0, until) }
        }
        let retryAt = current + delay.milliseconds
        if retryAt > state.deadlineAt {
            logger.warning("giving up on a message after its retry deadline",
                           metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
            return RelayOutcome(id: message.id, status: .failed, components: results,
                                lastError: "retry deadline passed: \(error)")
        }
        if let expiry, retryAt > expiry {
            return RelayOutcome(id: message.id, status: .expired, components: results,
                                lastError: "the ttl runs out before the next attempt: \(error)")
        }
        metrics.retried()
        return RelayOutcome(id: message.id, status: .pending, retryAt: retryAt, components: results,
                            lastError: error.description)
    }
}
