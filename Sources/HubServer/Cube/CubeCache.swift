import DAO
import Logging
import Mongo
import NIOCore
import Synchronization

/// The information cube held in memory, serialised once per version, so GET /channel is served like
/// a static file and POST /message finds its topic without a query.
///
/// Readers take the current snapshot and never wait for a reload. A write through this process
/// reloads before it answers (so its next read sees it); writes by other replicas arrive through
/// `CubeFollower` within a second. While a follower runs, a snapshot it has not confirmed current
/// for `maximumAge` (the database is unreachable) is not served: GET /channel answers 503 then,
/// rather than a cube that may be out of date.
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

    /// How long a followed snapshot may go unconfirmed before it is no longer served.
    let maximumAge: Duration
    private let channels: ChannelDAO
    private let current = Mutex<Snapshot?>(nil)
    /// When the database last showed the snapshot current; nil while no follower runs.
    private let confirmedAt = Mutex<ContinuousClock.Instant?>(nil)
    private let loader: Loader

    public init(channels: ChannelDAO, maximumAge: Duration = .milliseconds(1_500)) {
        self.channels = channels
        self.maximumAge = maximumAge
        self.loader = Loader()
    }

    /// The current snapshot, loading the first one if there is none yet.
    /// - Throws: `DAOError` when the first load fails, `.unavailable` when the snapshot went unconfirmed
    ///   for longer than `maximumAge`.
    func snapshot() async throws -> Snapshot {
        let latest = try await latestSnapshot()
        guard servableSnapshot() != nil else {
            throw DAOError(.unavailable, "the cube cannot be confirmed current: the database is unreachable")
        }
        return latest
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
        guard let snapshot = current.withLock({ $0 }) else { return nil }
        if let confirmed = confirmedAt.withLock({ $0 }), ContinuousClock.now - confirmed > maximumAge { return nil }
        return snapshot
    }

    /// Records that the database showed no change to the cube up to `instant` (the follower's heartbeat).
    func confirmCurrent(asOf instant: ContinuousClock.Instant) {
        confirmedAt.withLock { confirmed in
            if confirmed.map({ $0 < instant }) ?? true { confirmed = instant }
        }
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
            if confirmedAt.withLock({ $0 }) != nil { confirmCurrent(asOf: started) }
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

    /// Runs loads one at a time; a caller that arrives before the next load has started shares it.
    private actor Loader {
        /// The most recently scheduled load.
        private var latest: Task<Void, any Error>?
        private var latestNumber = 0
        private var latestStarted = true

        func load(_ work: @escaping @Sendable () async throws -> Void) async throws {
            // A load that has not started yet reads the database after this call was made: share it.
            if let latest, !latestStarted { return try await latest.value }
            let previous = latest
            latestNumber += 1
            let number = latestNumber
            latestStarted = false
            let task = Task {
                _ = await previous?.result
                self.started(number)
                try await work()
            }
            latest = task
            try await task.value
        }

        private func started(_ number: Int) {
            if number == latestNumber { latestStarted = true }
        }
    }
}

/// Follows the database's `icube` so writes by other replicas (or by hand) reach the cache:
/// a change stream where the server offers one, polling otherwise.
struct CubeFollower: Sendable {
    let cache: CubeCache
    let icube: MongoCollection
    let logger: Logger
    /// How often to reload when the server has no change streams.
    var pollInterval: Duration = .milliseconds(500)

    func run() async {
        // From now on the snapshot is served only while confirmed; the clock starts at the load
        // the hub made at start-up.
        cache.confirmCurrent(asOf: .now)
        var backoff = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                let stream = try await icube.watch(maxAwaitTimeMS: 500)
                defer { Task { await stream.close() } }
                // Changes made before the stream opened would otherwise be missed.
                try await cache.refresh()
                backoff = .milliseconds(200)
                cache.confirmCurrent(asOf: .now)
                while !Task.isCancelled {
                    let asked = ContinuousClock.now
                    if try await stream.next() != nil {
                        try await cache.refresh()
                    } else {
                        cache.confirmCurrent(asOf: asked)
                    }
                }
            } catch let error as MongoError where error.code == .commandFailed {
                logger.notice("the database offers no change streams; polling the cube", metadata: ["error": "\(error)"])
                await poll()
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("following the cube failed; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    private func poll() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: pollInterval)
            do {
                let asked = ContinuousClock.now
                try await cache.refresh()
                cache.confirmCurrent(asOf: asked)
            } catch {
                logger.warning("reloading the cube failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
