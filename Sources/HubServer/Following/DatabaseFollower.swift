import Logging
import Mongo

/// An in-memory copy of a collection that a `DatabaseFollower` keeps current.
struct FollowedCopy: Sendable {
    /// The collection copied.
    let collection: String
    /// Reloads the copy from the database.
    let reload: @Sendable () async throws -> Void
    /// How recently the database confirmed the copy.
    let freshness: Freshness
}

/// Follows the database so that in-memory copies of collections (the cube, the API tokens) see writes
/// by other replicas, or by hand, within a second: one change stream on the database, narrowed to
/// those collections, where the server offers change streams; polling otherwise. A change reloads the
/// copy of its collection; a quiet wait confirms every copy current (`Freshness`).
struct DatabaseFollower: Sendable {
    let database: MongoDatabase
    let copies: [FollowedCopy]
    let logger: Logger
    /// How often to reload when the server has no change streams.
    var pollInterval: Duration = .milliseconds(500)

    func run() async {
        // From now on the copies are used only while confirmed; the clock starts at the loads made at start-up.
        confirmAll(asOf: .now)
        var backoff = Duration.milliseconds(200)
        let watched: BSONValue = .array(copies.map { .string($0.collection) })
        while !Task.isCancelled {
            do {
                let stream = try await database.watch(pipeline: [["$match": ["ns.coll": ["$in": watched]]]],
                                                      maxAwaitTimeMS: 500)
                defer { Task { await stream.close() } }
                // Changes made before the stream opened would otherwise be missed.
                try await reloadAll()
                backoff = .milliseconds(200)
                confirmAll(asOf: .now)
                while !Task.isCancelled {
                    let asked = ContinuousClock.now
                    if let change = try await stream.next() {
                        // A reload confirms its copy as of its own start.
                        let collection = change[path: "ns.coll"]?.stringValue
                        for copy in copies where copy.collection == collection || collection == nil {
                            try await copy.reload()
                        }
                    } else {
                        // Nothing changed in any followed collection up to `asked`.
                        confirmAll(asOf: asked)
                    }
                }
            } catch let error as MongoError where error.code == .commandFailed {
                logger.notice("the database offers no change streams; polling", metadata: ["error": "\(error)"])
                await poll()
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("following the database failed; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    private func reloadAll() async throws {
        for copy in copies { try await copy.reload() }
    }

    private func confirmAll(asOf instant: ContinuousClock.Instant) {
        for copy in copies { copy.freshness.confirm(asOf: instant) }
    }

    private func poll() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: pollInterval)
            let asked = ContinuousClock.now
            for copy in copies {
                do {
                    try await copy.reload()
                    copy.freshness.confirm(asOf: asked)
                } catch {
                    logger.warning("reloading a followed collection failed", metadata: ["collection": "\(copy.collection)", "error": "\(error)"])
                }
            }
        }
    }
}
