import HubCore
import Mongo
import Synchronization

/// The HTTP bodies of the cube's current version (`CachedBody`: plain, gzip, ETag, the four answers), as admins
/// read it and as everyone else does (`CubeVisibility`: every `access` list empty), made once per version, when the cube loads (`prepare`, the cache's `didLoad`), so neither the network
/// thread nor the router compresses anything on a request.
final class CubeAnswers: Sendable {
    /// The bodies of one version of the cube.
    struct Bodies: Sendable {
        let version: Int
        let all: CachedBody
        let channels: [ObjectID: CachedBody]
        /// GET /channel for everyone but admins.
        let redactedAll: CachedBody
        /// GET /channel/:id for everyone but admins.
        let redactedChannels: [ObjectID: CachedBody]

        /// GET /channel's body for a caller who sees the access lists, or for one who does not.
        func all(showingAccess: Bool) -> CachedBody { showingAccess ? all : redactedAll }

        /// GET /channel/:id's body, as `all(showingAccess:)`.
        func channel(_ id: ObjectID, showingAccess: Bool) -> CachedBody? {
            showingAccess ? channels[id] : redactedChannels[id]
        }
    }

    private let current = Mutex<Bodies?>(nil)

    init() {}

    /// Makes the bodies of `snapshot` when its version is new.
    func prepare(_ snapshot: CubeSnapshot) {
        _ = bodies(for: snapshot)
    }

    /// The bodies of `snapshot`'s version, made now if they were not prepared (a router built without the
    /// composition root, in tests).
    func bodies(for snapshot: CubeSnapshot) -> Bodies? {
        if let bodies = current.withLock({ $0 }), bodies.version == snapshot.version { return bodies }
        guard let all = try? CachedBody(json: snapshot.json),
            let redactedAll = try? CachedBody(json: snapshot.redactedJSON)
        else { return nil }
        let bodies = Bodies(
            version: snapshot.version, all: all,
            channels: snapshot.channelJSON.compactMapValues {
                try? CachedBody(json: $0)
            }, redactedAll: redactedAll,
            redactedChannels: snapshot.redactedChannelJSON.compactMapValues {
                try? CachedBody(json: $0)
            })
        current.withLock { current in
            if (current?.version ?? 0) < bodies.version { current = bodies }
        }
        return bodies
    }
}
