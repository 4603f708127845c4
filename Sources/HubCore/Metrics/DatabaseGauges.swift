import DAO
import HubTime

/// The figures `/metrics` reads from the database (the outbox and subscription backlogs, devices by platform, the
/// rollouts), read at most once per `interval` however often and however many scrapers ask: a scrape within the
/// interval gets the last reading, and scrapes that arrive while a reading is under way share it. A reading that
/// fails (the database is down) keeps the last good one and waits out the interval too, so an outage costs a
/// scrape no wait beyond the first.
public struct DatabaseGauges: Sendable {
    /// One reading of the database's figures.
    public struct Reading: Sendable, Equatable {
        /// Messages due and not yet relayed, and the due time of the oldest (Unix ms).
        public var outboxDepth: Int64
        public var outboxOldestDueAt: Int64?
        /// Active devices by platform.
        public var devicesByPlatform: [Platform: Int]
        /// Subscriptions the reconciler has yet to apply at FCM, and the due time of the oldest (Unix ms).
        public var subscriptionsPending: Int
        public var subscriptionsOldestDueAt: Int64?
        /// Subjects being rolled out to every device.
        public var rollouts: Int
        /// When the reading was taken (Unix ms).
        public var readAt: Int64

        public init(
            outboxDepth: Int64, outboxOldestDueAt: Int64?, devicesByPlatform: [Platform: Int],
            subscriptionsPending: Int, subscriptionsOldestDueAt: Int64?, rollouts: Int, readAt: Int64
        ) {
            self.outboxDepth = outboxDepth
            self.outboxOldestDueAt = outboxOldestDueAt
            self.devicesByPlatform = devicesByPlatform
            self.subscriptionsPending = subscriptionsPending
            self.subscriptionsOldestDueAt = subscriptionsOldestDueAt
            self.rollouts = rollouts
            self.readAt = readAt
        }
    }

    /// How often the database is read at most by default: Prometheus's usual scrape interval.
    public static let defaultInterval = Duration.seconds(15)

    /// The readings, at most one per interval, shared by concurrent scrapes.
    private let reading: PeriodicReading<Reading>
    /// How many readings were started: what the scrapes cost the database, for tests and the `/metrics` page.
    public var readings: Int { get async { await reading.readings } }

    /// The gauges of the hub over `services`' database, on `now` or else the services' clock.
    public init(services: HubServices, interval: Duration = DatabaseGauges.defaultInterval, now: UnixClock? = nil) {
        let outbox = services.outbox, devices = services.devices
        self.init(interval: interval, now: now ?? services.now) { time in
            let backlog = try await outbox.backlog(now: time)
            let statistics = try await devices.statistics()
            return Reading(
                outboxDepth: backlog.count, outboxOldestDueAt: backlog.oldestDueAt,
                devicesByPlatform: statistics.byPlatform, subscriptionsPending: statistics.pending,
                subscriptionsOldestDueAt: statistics.oldestPendingDueAt, rollouts: statistics.rollouts,
                readAt: time)
        }
    }

    /// Gauges that take their figures from `read`.
    init(interval: Duration, now: @escaping UnixClock, read: @escaping @Sendable (Int64) async throws -> Reading) {
        self.reading = PeriodicReading(interval: interval, now: now, read: read)
    }

    /// The latest reading: the last one when it is younger than the interval, else a new one (shared with every
    /// caller that asks meanwhile); nil when the database has never answered.
    public func current() async -> Reading? {
        await reading.current()
    }
}
