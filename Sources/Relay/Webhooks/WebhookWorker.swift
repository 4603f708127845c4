import Curl
import DAO
import Foundation
import Logging
import Mongo

/// Delivers webhook events from the outbox in `webhook_deliveries`, for the hub's life, beside the message relay.
///
/// Any number of replicas run one each: a delivery is claimed under a lease in the database (`WebhookDeliveryDAO`),
/// attempted once, and its outcome recorded under that lease, so nothing lives only in one process. Each attempt
/// resolves the URL's host again and connects to the address the SSRF rule accepted (`WebhookTargetResolving`), POSTs
/// the body signed by the Standard Webhooks scheme with short time-outs and no redirects followed, and counts a 2xx as
/// delivered. Anything else is tried again after the relay's backoff (`RetryPolicy`) until `retryFor` after the event,
/// then marked failed. The receiver's answer body is never kept.
public struct WebhookWorker: Sendable {
    /// How the worker claims and retries.
    public struct Configuration: Sendable {
        /// Deliveries attempted at once in this process (and claimed together).
        public var concurrency = 8
        /// How long a claim holds: many times an attempt's longest (resolution, 5 s to connect, 10 s in all).
        public var lease: Duration = .seconds(120)
        /// The wait between attempts (the relay's policy: doubling from `base` up to `cap`, with jitter).
        public var retry = RetryPolicy(base: .seconds(1), cap: .seconds(300), quotaPause: nil)
        /// How long after an event its delivery is retried before it is marked failed.
        public var retryFor: Duration = .seconds(24 * 3600)
        /// How often the outbox is read when no event of this process wakes the worker (other replicas' events).
        public var poll: Duration = .seconds(1)
        /// The HTTP client's time-outs.
        public var connectTimeout: Duration = .seconds(5)
        public var requestTimeout: Duration = .seconds(10)

        public init() {}
    }

    let deliveries: WebhookDeliveryDAO
    let webhooks: WebhookDAO
    let resolver: any WebhookTargetResolving
    let wake: WakeSignal
    let configuration: Configuration
    let logger: Logger
    let now: UnixClock
    /// This process's name in the leases it takes.
    let owner: String

    public init(
        database: MongoDatabase, subscribers: WebhookSubscribers, resolver: any WebhookTargetResolving,
        configuration: Configuration, logger: Logger, now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        self.deliveries = WebhookDeliveryDAO(database: database)
        self.webhooks = WebhookDAO(database: database, subscribers: subscribers)
        self.resolver = resolver
        self.wake = subscribers.wake
        self.configuration = configuration
        self.logger = logger
        self.now = now
        self.owner = "webhooks-\(ProcessInfo.processInfo.hostName)-\(getpid())-\(ObjectID().hex)"
    }

    /// Claims and delivers until the task is cancelled; attempts under way finish and are recorded first.
    public func run() async {
        let http = CurlClient(
            configuration: CurlClient.Configuration(
                threads: max(configuration.concurrency, 1), connectTimeout: configuration.connectTimeout,
                requestTimeout: configuration.requestTimeout, maxResponseBytes: 1 << 20))
        // Woken at once by this process's events; other replicas' are found by the poll.
        await PollingLoop.run(
            logger: logger, failure: "the webhook outbox could not be read",
            idle: { await wake.wait(timeout: configuration.poll) }
        ) {
            try await step(http: http)
        }
        try? await http.shutdown()
    }

    /// One pass of `run()`: claims due deliveries, attempts them through `http`, records each; false when none is due.
    /// - Throws: `DAOError` when the database fails.
    func step(http: CurlClient) async throws -> Bool {
        guard
            let claim = try await deliveries.claim(
                owner: owner, now: now(),
                leaseMS: configuration.lease.milliseconds,
                limit: configuration.concurrency)
        else { return false }
        try await deliver(claim, http: http)
        return true
    }

    /// Attempts every delivery of `claim` at once and records each outcome.
    private func deliver(_ claim: WebhookClaim, http: CurlClient) async throws {
        let found = try await webhooks.find(Array(Set(claim.deliveries.map(\.webhook))))
        let byID = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        await withTaskGroup(of: Void.self) { group in
            for delivery in claim.deliveries {
                group.addTask {
                    let outcome = await attempt(delivery, to: byID[delivery.webhook], http: http)
                    await record(outcome, of: delivery, lease: claim.lease)
                }
            }
        }
    }

    /// What one attempt comes to: nil when the worker stopped before sending (the delivery goes back at once).
    private func attempt(_ delivery: WebhookDelivery, to webhook: Webhook?, http: CurlClient) async
        -> WebhookDeliveryDAO.Outcome?
    {
        guard let webhook else { return .failed(status: nil, error: "webhook_deleted") }
        guard let key = WebhookSignature.key(secret: webhook.secret) else {
            return .failed(status: nil, error: "invalid_secret")
        }
        let pinned: CurlPinnedAddress
        do {
            pinned = try await resolver.pinnedAddress(for: webhook.url)
        } catch {
            logger.notice(
                "a webhook's address was refused",
                metadata: [
                    "webhook": "\(webhook.id.hex)", "code": "\(error.code)", "reason": "\(error.message)",
                ])
            return failure(delivery, status: nil, error: error.code)
        }
        if Task.isCancelled { return nil }
        let timestamp = now() / 1000
        let body = Array(delivery.body.utf8)
        let headers = [
            HTTPHeader("Content-Type", "application/json"), HTTPHeader("User-Agent", "msi-hub-webhooks"),
            HTTPHeader("webhook-id", delivery.messageID), HTTPHeader("webhook-timestamp", "\(timestamp)"),
            HTTPHeader(
                "webhook-signature",
                WebhookSignature.sign(id: delivery.messageID, timestamp: timestamp, body: body, key: key)),
        ]
        do {
            let response = try await http.send(.post, url: webhook.url, headers: headers, body: body, pinned: pinned)
            if (200..<300).contains(response.status) { return .delivered(status: response.status) }
            return failure(delivery, status: response.status, error: nil)
        } catch let error as CurlError where error.code == .cancelled || error.code == .shutDown {
            return nil
        } catch let error as CurlError {
            return failure(delivery, status: nil, error: Self.code(error))
        } catch {
            return failure(delivery, status: nil, error: "other")
        }
    }

    /// A failed attempt: tried again after the backoff, or failed when that would pass the retry window.
    private func failure(_ delivery: WebhookDelivery, status: Int?, error: String?) -> WebhookDeliveryDAO.Outcome {
        let retryAt = now() + configuration.retry.delay(afterAttempt: delivery.attempts).milliseconds
        if retryAt > delivery.createdAt + configuration.retryFor.milliseconds {
            logger.warning(
                "giving up on a webhook delivery after its retry window",
                metadata: ["delivery": "\(delivery.id.hex)", "event": "\(delivery.event)"])
            return .failed(status: status, error: error)
        }
        return .retry(at: retryAt, status: status, error: error)
    }

    /// Records `outcome` under `lease`, a few times when the database fails (else the lease runs out and the delivery
    /// is attempted again: receivers tell a repeat by its `webhook-id`).
    private func record(_ outcome: WebhookDeliveryDAO.Outcome?, of delivery: WebhookDelivery, lease: String) async {
        await WriteRetry.run("recording a webhook delivery failed", logger: logger, attempts: 3) {
            if let outcome {
                try await deliveries.record(outcome, for: delivery.id, lease: lease, now: now())
            } else {
                try await deliveries.release(delivery.id, lease: lease)
            }
        }
    }

    /// The code a transport failure is recorded under.
    static func code(_ error: CurlError) -> String {
        switch error.code {
        case .timeout: "timeout"
        case .connectFailed: "connect_failed"
        case .tls: "tls"
        case .invalidRequest: "invalid_request"
        default: "other"
        }
    }
}
