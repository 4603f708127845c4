import DAO
import HubTime

/// How far behind the relay is, and the bound past which POST /message refuses new messages rather than accept what
/// would reach phones minutes later (`RELAY_MAX_BACKLOG_SECONDS`).
///
/// The backlog's age is that of the oldest message due and not yet sent: the oldest one waiting in the outbox for a
/// worker (due, no lease holds it), or the oldest one a worker took over in memory and has not sent yet (its
/// progress record's `since`). Read from the database, so every replica judges by the same figure, at most once a
/// second however many requests ask (`PeriodicReading`): a POST costs no read of its own.
public struct RelayBacklog: Sendable {
    /// The oldest unsent message's time, as read.
    struct Oldest: Sendable {
        /// When the oldest unsent message was due (Unix ms); nil when none is.
        var dueAt: Int64?
    }

    /// How often the backlog is read at most.
    public static let readInterval = Duration.seconds(1)

    /// Past this age new messages are refused; nil: never.
    public let maximum: Duration?
    private let reading: PeriodicReading<Oldest>
    private let now: UnixClock

    init(outbox: OutboxDAO, progress: RelayProgressDAO, maximum: Duration?, now: @escaping UnixClock) {
        self.maximum = maximum
        self.now = now
        self.reading = PeriodicReading(interval: Self.readInterval, now: now) { time in
            let waiting = try await outbox.oldestWaitingDueAt(now: time)
            let outstanding = try await progress.all().compactMap(\.oldestOutstanding).min()
            return Oldest(dueAt: [waiting, outstanding].compactMap { $0 }.min())
        }
    }

    /// The age of the oldest message due and not yet sent (zero when none is); nil when the database never
    /// answered.
    public func age() async -> Duration? {
        guard let oldest = await reading.current() else { return nil }
        return .milliseconds(oldest.dueAt.map { max(0, now() - $0) } ?? 0)
    }

    /// Why a new message is refused now: the backlog is older than `maximum`; nil when it may be stored (or when
    /// the backlog cannot be read: the insert itself then says whether the database is there).
    public func refusal() async -> SendRefusal? {
        guard let maximum, let age = await age(), age > maximum else { return nil }
        return SendRefusal(
            .relayBehind,
            "the relay to FCM is \(age.milliseconds / 1000) s behind (at most "
                + "\(maximum.milliseconds / 1000) s): new messages are refused until it catches up")
    }
}
