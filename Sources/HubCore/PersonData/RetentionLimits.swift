import DAO
import HubTime
import Logging
import Mongo

/// How long the hub keeps what records persons' reach (`RETENTION_DELIVERIES_DAYS`, `RETENTION_RECEIPTS_DAYS`,
/// `RETENTION_MESSAGES_DAYS`, `RETENTION_ROOM_POSTS_DAYS`; 0 or absent: kept), and the purge that enforces it: a batch
/// of 1,000 a collection at a time, a short pause between batches so that sends go on, every few minutes on each
/// replica (the deletes are of the same old records, so two replicas at once only repeat a read).
public struct RetentionLimits: Sendable, Equatable {
    /// Days each kind is kept.
    public var days: [RetentionDAO.Kind: Int]

    public init(days: [RetentionDAO.Kind: Int] = [:]) {
        self.days = days.filter { $0.value > 0 }
    }

    /// Whether any limit is set.
    public var isEmpty: Bool { days.isEmpty }
}

/// The purge of records past their retention limit.
public struct RetentionSweep: Sendable {
    let retention: RetentionDAO
    public let limits: RetentionLimits
    let logger: Logger
    let now: UnixClock

    /// Records deleted per collection and batch.
    let batch: Int

    init(database: MongoDatabase, limits: RetentionLimits, logger: Logger, now: @escaping UnixClock, batch: Int = 1_000)
    {
        self.retention = RetentionDAO(database: database)
        self.limits = limits
        self.logger = logger
        self.now = now
        self.batch = batch
    }

    /// Deletes everything past its limit, a batch at a time with `pause` between batches; answers the counts.
    /// - Throws: `DAOError`.
    @discardableResult
    public func purge(pause: Duration = .milliseconds(20)) async throws -> [RetentionDAO.Kind: Int64] {
        var counts: [RetentionDAO.Kind: Int64] = [:]
        for (kind, days) in limits.days.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let time = now()
            let cutoff = time - Int64(days) * 86_400_000
            var after: [String: BSONValue] = [:]
            while !Task.isCancelled {
                let (deleted, next) = try await retention.purgeBatch(
                    kind, before: cutoff, now: time, after: after, limit: batch)
                counts[kind, default: 0] += deleted
                guard !next.isEmpty else { break }
                after = next
                try? await Task.sleep(for: pause)
            }
        }
        return counts
    }

    /// Purges every `interval` until cancelled (without a limit set it only waits: a service that returned would
    /// stop the hub's service group).
    public func loop(interval: Duration = .seconds(600)) async {
        while !Task.isCancelled {
            guard !limits.isEmpty else {
                try? await Task.sleep(for: .seconds(3600))
                continue
            }
            do {
                let counts = try await purge()
                if counts.values.contains(where: { $0 > 0 }) {
                    logger.info(
                        "records past their retention deleted",
                        metadata: ["counts": "\(counts.map { "\($0.key.rawValue)=\($0.value)" }.sorted())"])
                }
            } catch {
                logger.warning("the retention purge failed; it runs again later", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
