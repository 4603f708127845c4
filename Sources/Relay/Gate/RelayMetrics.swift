import DAO
import FCM
import Metrics

/// The relay's counters, through swift-metrics: the hub bootstraps a Prometheus backend behind them
/// before it makes a worker, and serves them at GET /metrics.
struct RelayMetrics: Sendable {
    private let sentCounters: [String: Counter]
    private let retryableFailures: [String: Counter]
    private let permanentFailures: [String: Counter]
    private let retries = Counter(label: "msi_relay_retried_total")
    private let claims = Counter(label: "msi_outbox_claims_total")
    private let claimedMessages = Counter(label: "msi_outbox_claimed_messages_total")
    private let outcomeWrites = Counter(label: "msi_outbox_outcome_writes_total")
    private let outcomeStatements = Counter(label: "msi_outbox_outcome_statements_total")
    private let direct = Counter(label: "msi_outbox_direct_messages_total")
    private let progressWrites = Counter(label: "msi_outbox_progress_writes_total")
    private let handedBackMessages = Counter(label: "msi_outbox_handed_back_messages_total")
    private let renewals = Counter(label: "msi_outbox_lease_renewals_total")
    private let lostLeases = Counter(label: "msi_outbox_lost_leases_total")
    private let pauses = Counter(label: "msi_relay_pauses_total")
    private let probes = Counter(label: "msi_relay_probes_total")
    private let outcomes: [RelayStatus: Counter]

    init() {
        func perComponent(_ label: String, _ extra: [(String, String)] = []) -> [String: Counter] {
            Dictionary(
                uniqueKeysWithValues: Self.componentDimensions.map {
                    ($0, Counter(label: label, dimensions: [("component", $0)] + extra))
                })
        }
        sentCounters = perComponent("msi_relay_sent_total")
        retryableFailures = perComponent("msi_relay_failed_total", [("kind", "retryable")])
        permanentFailures = perComponent("msi_relay_failed_total", [("kind", "permanent")])
        outcomes = Dictionary(
            uniqueKeysWithValues: RelayStatus.allCases.map {
                ($0, Counter(label: "msi_relay_outcomes_total", dimensions: [("state", $0.rawValue)]))
            })
    }

    /// The `component` dimension's values: a translated Alert's requests count together as `language`, so that the
    /// number of series does not grow with the languages sent.
    static let componentDimensions = ["notification", "data", "devices", "language"]

    /// The `component` dimension of `component`.
    static func dimension(_ component: RelayComponent) -> String {
        component.isLanguage ? "language" : component.rawValue
    }

    /// A claim leased `count` messages.
    func claimed(_ count: Int) {
        claims.increment()
        claimedMessages.increment(by: count)
    }

    /// A message stored by this process came to its worker in memory, without a claim.
    func handedOver(_ count: Int) {
        direct.increment(by: count)
    }

    /// The worker's progress record was written (messages sent without a write of their own, and its lease).
    func progressWritten() {
        progressWrites.increment()
    }

    /// Messages of a direct record went back to the outbox: a dead worker's, or unsure inserts.
    func handedBack(_ count: Int) {
        handedBackMessages.increment(by: count)
    }

    /// One command renewed the leases of messages still being sent.
    func renewed() {
        renewals.increment()
    }

    /// Leases a renewal found gone: their messages written meanwhile, or taken over by another worker.
    func lost(_ count: Int) {
        lostLeases.increment(by: count)
    }

    /// FCM's 503, 429 or a time-out paused the relay of the project.
    func paused() {
        pauses.increment()
    }

    /// A probe went to FCM after a pause.
    func probed() {
        probes.increment()
    }

    /// FCM accepted a component.
    func sent(_ component: RelayComponent) {
        sentCounters[Self.dimension(component)]?.increment()
    }

    /// FCM refused a component, for now or for good.
    func failed(_ component: RelayComponent, retryable: Bool) {
        (retryable ? retryableFailures : permanentFailures)[Self.dimension(component)]?.increment()
    }

    /// A message was put back to be retried later.
    func retried() {
        retries.increment()
    }

    /// A message reached a new state (sent, failed, expired, or pending again for a retry).
    func finished(_ status: RelayStatus) {
        outcomes[status]?.increment()
    }

    /// One bulk write recorded `statements` messages' outcomes and components.
    func recorded(_ statements: Int) {
        outcomeWrites.increment()
        outcomeStatements.increment(by: statements)
    }
}
