import Metrics
import Prometheus

/// The process's metrics: swift-metrics is bootstrapped once with a Prometheus registry, which
/// GET /metrics emits. Libraries (Hummingbird's request metrics, the relay) record through swift-metrics;
/// figures read on demand (pool, outbox, cube) are set as gauges just before each scrape.
final class HubMetrics: Sendable {
    /// The one registry of the process (swift-metrics has one global backend).
    static let shared = HubMetrics()

    let registry: PrometheusCollectorRegistry

    private init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (Self.sanitize(name), labels.map { (Self.sanitize($0.0), $0.1) })
        }
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2_500), .seconds(5),
        ]
        MetricsSystem.bootstrap(factory)
        self.registry = registry
    }

    /// Makes sure the backend is in place before anything creates a metric.
    static func bootstrap() {
        _ = shared
    }

    /// A Prometheus name: `hb.requests` becomes `hb_requests`.
    static func sanitize(_ name: String) -> String {
        String(
            name.unicodeScalars.map { scalar in
                (scalar.properties.isASCIIHexDigit || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                    || scalar == "_") ? Character(scalar) : "_"
            })
    }

    /// Sets the gauge `name` of the registry (created on first use, with `help` as its description).
    func set(_ name: String, _ value: Double, help: String) {
        registry.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help)).set(
            to: value)
    }

    /// Sets the gauge `name` with `labels` (created on first use, with `help` as its description).
    func set(_ name: String, labels: [(String, String)], _ value: Double, help: String) {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels
        )
        .set(to: value)
    }

    /// The registry in Prometheus's text format.
    func emit() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }
}
