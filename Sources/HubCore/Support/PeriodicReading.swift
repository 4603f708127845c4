import HubTime

/// A figure read from the database at most once per `interval` however many callers ask: a call within the interval
/// gets the last reading, and calls that arrive while a reading is under way share it. A reading that fails (the
/// database is down) keeps the last good one and waits out the interval too, so an outage costs the callers no wait
/// beyond the first. `DatabaseGauges` (metrics) and `RelayBacklog` (POST /message's bound) read through one.
public actor PeriodicReading<Value: Sendable> {
    /// Reads the figure at a time (Unix ms).
    private let read: @Sendable (Int64) async throws -> Value
    /// The clock, in Unix ms (tests move it).
    private let now: UnixClock
    private let intervalMS: Int64
    /// The last good reading.
    private var last: Value?
    /// When the last reading was started (Unix ms), good or not.
    private var startedAt: Int64?
    /// The reading under way, which concurrent callers share.
    private var running: Task<Value?, Never>?
    /// How many readings were started: what the callers cost the database, for tests.
    public private(set) var readings = 0

    /// Readings from `read`, at most one per `interval` on the clock `now`.
    public init(interval: Duration, now: @escaping UnixClock, read: @escaping @Sendable (Int64) async throws -> Value) {
        self.intervalMS = interval.milliseconds
        self.now = now
        self.read = read
    }

    /// The latest reading: the last one when it is younger than the interval, else a new one (shared with every
    /// caller that asks meanwhile); nil when the database has never answered.
    public func current() async -> Value? {
        if let running { return await running.value ?? last }
        let time = now()
        // A clock that went back (tests, or a corrected wall clock) reads again rather than wait for it.
        if let startedAt, time >= startedAt, time - startedAt < intervalMS { return last }
        startedAt = time
        readings += 1
        let read = self.read
        let task = Task { try? await read(time) }
        running = task
        let reading = await task.value
        running = nil
        if let reading { last = reading }
        return last
    }
}
