import DAO
import Logging
import Mongo
import NIOCore
import Synchronization

/// The information cube held in memory, serialised once per version, so GET /channel is served like
/// a static file and POST /message finds its topic without a query.
///
/// Readers take the current snapshot and do not wait for reloads. A write through this process
/// reloads before it answers (so its next read sees it); writes by other replicas arrive through
/// the `DatabaseFollower` within a second. While a follower runs, a snapshot it has not confirmed
/// current within `maximumAge` (a busy or unreachable database) is not served as it is: the request
/// reads the database first, and answers 503 when that fails, rather than a cube that may be out of date.
public final class CubeCache: Sendable {
    /// One version of the cube, ready to serve.
    struct Snapshot: Sendable {
        let all: CachedBody
        let channels: [ObjectID: CachedBody]
        let topics: [String: SubjectLocation]
        /// Every channel as a model, in the database's order (the portal's selects).
        let models: [DAO.Channel]
        /// Distinct contents loaded so far: a reload that finds the same cube keeps the version.
        let version: Int
        /// Loads so far.
        let loads: Int
    }

    /// How recently the database confirmed the snapshot (set by the `DatabaseFollower`).
    let freshness: Freshness
    private let channels: ChannelDAO
    private let current = Mutex<Snapshot?>(nil)
    private let loader = SharedLoader()

    public init(channels: ChannelDAO, maximumAge: Duration = .seconds(1)) {
        self.channels = channels
        self.freshness = Freshness(maximumAge: maximumAge)
    }

    /// The current snapshot. When there is none yet, or the database has not confirmed it lately (a
    /// busy or unreachable database), it is read from the database first; requests arriving meanwhile
    /// share that load.
    /// - Throws: `DAOError` (`.unavailable` when the database cannot be read).
    func snapshot() async throws -> Snapshot {
        if let snapshot = servableSnapshot() { return snapshot }
        try await refresh()
        guard let snapshot = servableSnapshot() else {
            throw DAOError(.unavailable, "the cube cannot be confirmed current: the database is unreachable")
        }
        return snapshot
    }

    /// The latest snapshot even when the database has not confirmed it lately, loading the first one
    /// if there is none: for pages that only offer choices, which the database checks again on use.
    /// - Throws: `DAOError` when the first load fails.
    func latestSnapshot() async throws -> Snapshot {
        if let snapshot = current.withLock({ $0 }) { return snapshot }
        try await refresh()
        guard let snapshot = current.withLock({ $0 }) else { throw DAOError(.unavailable, "the cube is not loaded") }
        return snapshot
    }

    /// The current snapshot without waiting: nil when none is loaded yet or it went unconfirmed for
    /// longer than `maximumAge` (callers then go the slow way, which loads or answers 503).
    func servableSnapshot() -> Snapshot? {
        guard let snapshot = current.withLock({ $0 }), freshness.isCurrent else { return nil }
        return snapshot
    }

    /// The cube's version (distinct contents loaded), loads and serialised size, for metrics.
    var statistics: (version: Int, loads: Int, bytes: Int) {
        current.withLock { ($0?.version ?? 0, $0?.loads ?? 0, $0?.all.plain.readableBytes ?? 0) }
    }

    /// Reloads the cube from the database; concurrent calls share loads, and a call returns only
    /// after a load that started after it was made.
    /// - Throws: `DAOError` when the load fails (the previous snapshot keeps being served).
    public func refresh() async throws {
        try await loader.load { [self] in
            let started = ContinuousClock.now
            let documents = try await channels.getAllDocuments()
            let previous = current.withLock { $0 }
            let snapshot = try Self.build(documents, previous: previous)
            current.withLock { $0 = snapshot }
            if freshness.isFollowed { freshness.confirm(asOf: started) }
        }
    }

    /// The subject with this topic key, from memory when this version of the cube has it.
    func location(topicKey: String, subjects: SubjectDAO) async throws -> SubjectLocation {
        if let location = try? await snapshot().topics[topicKey] { return location }
        // Not in memory: a subject added by another replica a moment ago is still found.
        return try await subjects.find(topicKey: topicKey)
    }

    /// The snapshot of `documents`; the previous one again (one more load) when the content is the same,
    /// so an unchanged cube is neither compressed again nor given a new version.
    private static func build(_ documents: [BSONDocument], previous: Snapshot?) throws -> Snapshot {
        let writer = LegacyJSONWriter()
        let json = writer.bytes(.array(documents.map(BSONValue.document)))
        let loads = (previous?.loads ?? 0) + 1
        if let previous, previous.all.etag == CachedBody.etag(of: json) {
            return Snapshot(all: previous.all, channels: previous.channels, topics: previous.topics,
                            models: previous.models, version: previous.version, loads: loads)
        }
        let all = try CachedBody(json: json)
        var channels: [ObjectID: CachedBody] = [:]
        var topics: [String: SubjectLocation] = [:]
        var models: [DAO.Channel] = []
        for document in documents {
            guard let channel = Channel(document: document) else { continue }
            models.append(channel)
            channels[channel.id] = try CachedBody(json: writer.bytes(document))
            for area in channel.areas {
                for subject in area.subjects where topics[subject.topicKey] == nil {
                    topics[subject.topicKey] = SubjectLocation(channel: channel, area: area, subject: subject)
                }
            }
        }
        return Snapshot(all: all, channels: channels, topics: topics, models: models, version: (previous?.version ?? 0) + 1, loads: loads)
    }
}
