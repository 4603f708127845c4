import Logging
import Mongo

/// Follows a collection so that an in-memory copy of it (the cube, the API tokens) sees writes by
/// other replicas, or by hand, within a second: a change stream where the server offers one, polling
/// otherwise. Each change reloads the copy; each quiet wait confirms it current (`Freshness`).
struct CollectionFollower: Sendable {
    let collection: MongoCollection
    /// Reloads the copy from the database.
    let reload: @Sendable () async throws -> Void
    let freshness: Freshness
    let logger: Logger
    /// How often to reload when the server has no change streams.
    var pollInterval: Duration = .milliseconds(500)

    func run() async {
        // From now on the copy is used only while confirmed; the clock starts at the load made at start-up.
        freshness.confirm(asOf: .now)
        var backoff = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                let stream = try await collection.watch(maxAwaitTimeMS: 500)
                defer { Task { await stream.close() } }
                // Changes made before the stream opened would otherwise be missed.
                try await reload()
                backoff = .milliseconds(200)
                freshness.confirm(asOf: .now)
                while !Task.isCancelled {
                    let asked = ContinuousClock.now
                    if try await stream.next() != nil {
                        try await reload()
                    } else {
                        freshness.confirm(asOf: asked)
                    }
                }
            } catch let error as MongoError where error.code == .commandFailed {
                logger.notice("the database offers no change streams; polling", metadata: ["collection": "\(collection.name)", "error": "\(error)"])
                await poll()
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("following a collection failed; retrying", metadata: ["collection": "\(collection.name)", "error": "\(error)"])
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
                try await reload()
                freshness.confirm(asOf: asked)
            } catch {
                logger.warning("reloading a followed collection failed", metadata: ["collection": "\(collection.name)", "error": "\(error)"])
            }
        }
    }
}
