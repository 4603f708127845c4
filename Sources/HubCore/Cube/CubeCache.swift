import DAO
import Mongo
import Synchronization

/// One version of the information cube in memory: the legacy JSON of every channel and of each one, the
/// models, and the subject of every topic.
public struct CubeSnapshot: Sendable {
    /// GET /channel's body: every icube document as the legacy hub served it.
    public let json: [UInt8]
    /// GET /channel/:id's body, per channel.
    public let channelJSON: [ObjectID: [UInt8]]
    /// GET /channel's body for everyone but admins: `json` with every `access` list empty (`CubeVisibility`).
    public let redactedJSON: [UInt8]
    /// GET /channel/:id's body for everyone but admins, per channel.
    public let redactedChannelJSON: [ObjectID: [UInt8]]
    /// The subject of each topic key.
    public let topics: [String: SubjectLocation]
    /// Every channel as a model, in the database's order (the portal's selects).
    public let channels: [Channel]
    /// Distinct contents loaded so far: a reload that finds the same cube keeps the version.
    public let version: Int
    /// Loads so far.
    public let loads: Int
}

/// The information cube held in memory, so GET /channel is served like a static file and POST /message
/// finds its topic without a query.
///
/// Readers take the current snapshot and never wait for the database once one was loaded: a snapshot the
/// `DatabaseFollower` has not confirmed lately (a busy or unreachable database) is still served, with its
/// age (`Freshness.age`), while a reload runs in the background. A write through this process reloads before
/// it answers (so its next read sees it); writes by other replicas arrive through the follower within a second.
public final class CubeCache: Sendable {
    /// How recently the database confirmed the snapshot (set by the `DatabaseFollower`).
    public let freshness: Freshness
    private let channels: ChannelDAO
    private let subjects: SubjectDAO
    private let current = Mutex<CubeSnapshot?>(nil)
    private let loader = SharedLoader()
    /// Called with each new version, on the loading task (the HTTP layer prepares its answers there).
    private let didLoad: @Sendable (CubeSnapshot) -> Void

    /// Whether a background reload is under way (one at a time).
    private let reloading = Mutex(false)

    public init(
        channels: ChannelDAO, subjects: SubjectDAO, maximumAge: Duration = .seconds(1),
        didLoad: @escaping @Sendable (CubeSnapshot) -> Void = { _ in }
    ) {
        self.channels = channels
        self.subjects = subjects
        self.freshness = Freshness(maximumAge: maximumAge)
        self.didLoad = didLoad
    }

    /// The latest snapshot, loading the first one if there is none. A snapshot not confirmed lately is
    /// served as it is while a reload runs in the background.
    /// - Throws: `DAOError` (`.unavailable`) only while no snapshot was ever loaded and the load fails.
    public func snapshot() async throws -> CubeSnapshot {
        if let snapshot = latest() { return snapshot }
        try await refresh()
        guard let snapshot = latest() else { throw DAOError(.unavailable, "the cube is not loaded") }
        return snapshot
    }

    /// The latest snapshot without waiting (nil before the first load); when the database has not
    /// confirmed it lately a reload is started in the background.
    public func latest() -> CubeSnapshot? {
        guard let snapshot = current.withLock({ $0 }) else { return nil }
        if !freshness.isCurrent { refreshInBackground() }
        return snapshot
    }

    /// The cube's version (distinct contents loaded), loads and serialised size, for metrics.
    public var statistics: (version: Int, loads: Int, bytes: Int) {
        current.withLock { ($0?.version ?? 0, $0?.loads ?? 0, $0?.json.count ?? 0) }
    }

    /// Reloads the cube from the database; concurrent calls share loads, and a call returns only
    /// after a load that started after it was made.
    /// - Throws: `DAOError` when the load fails (the previous snapshot keeps being served).
    public func refresh() async throws {
        try await loader.load { [self] in
            let started = ContinuousClock.now
            let documents = try await channels.getAllDocuments()
            let previous = current.withLock { $0 }
            let snapshot = Self.build(documents, previous: previous)
            if snapshot.version != previous?.version { didLoad(snapshot) }
            current.withLock { $0 = snapshot }
            if freshness.isFollowed { freshness.confirm(asOf: started) }
        }
    }

    /// Starts one reload unless one is running; its failure leaves the snapshot as it is.
    private func refreshInBackground() {
        guard
            reloading.withLock({ running in
                defer { running = true }; return !running
            })
        else { return }
        Task { [self] in
            try? await refresh()
            reloading.withLock { $0 = false }
        }
    }

    /// The subject with this topic key, from memory when this version of the cube has it.
    /// - Throws: `DAOError` (`.topicNotFound`, `.unavailable`).
    public func location(topicKey: String) async throws -> SubjectLocation {
        if let location = try? await snapshot().topics[topicKey] { return location }
        // Not in memory: a subject added by another replica a moment ago is still found.
        return try await subjects.find(topicKey: topicKey)
    }

    /// The snapshot of `documents`; the previous one again (one more load) when the content is the same,
    /// so an unchanged cube keeps its version.
    private static func build(_ documents: [BSONDocument], previous: CubeSnapshot?) -> CubeSnapshot {
        let writer = LegacyJSONWriter()
        let json = writer.bytes(.array(documents.map(BSONValue.document)))
        let loads = (previous?.loads ?? 0) + 1
        if let previous, previous.json == json {
            return CubeSnapshot(
                json: previous.json, channelJSON: previous.channelJSON,
                redactedJSON: previous.redactedJSON, redactedChannelJSON: previous.redactedChannelJSON,
                topics: previous.topics, channels: previous.channels, version: previous.version,
                loads: loads)
        }
        let redacted = documents.map(CubeVisibility.redacted)
        var channelJSON: [ObjectID: [UInt8]] = [:], redactedChannelJSON: [ObjectID: [UInt8]] = [:]
        var topics: [String: SubjectLocation] = [:]
        var models: [Channel] = []
        for (document, redactedDocument) in zip(documents, redacted) {
            guard let channel = Channel(document: document) else { continue }
            models.append(channel)
            channelJSON[channel.id] = writer.bytes(document)
            redactedChannelJSON[channel.id] = writer.bytes(redactedDocument)
            for area in channel.areas {
                for subject in area.subjects where topics[subject.topicKey] == nil {
                    topics[subject.topicKey] = SubjectLocation(channel: channel, area: area, subject: subject)
                }
            }
        }
        return CubeSnapshot(
            json: json, channelJSON: channelJSON,
            redactedJSON: writer.bytes(.array(redacted.map(BSONValue.document))),
            redactedChannelJSON: redactedChannelJSON, topics: topics, channels: models,
            version: (previous?.version ?? 0) + 1, loads: loads)
    }
}
