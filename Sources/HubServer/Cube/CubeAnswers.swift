import HubCore
import Mongo
import Synchronization

/// The HTTP bodies of the cube's current version (`CachedBody`: plain, gzip, ETag, the four answers),
/// made once per version, when the cube loads (`prepare`, the cache's `didLoad`), so neither the network
/// thread nor the router compresses anything on a request.
final class CubeAnswers: Sendable {
    /// The bodies of one version of the cube.
    struct Bodies: Sendable {
        let version: Int
        let all: CachedBody
        let channels: [ObjectID: CachedBody]
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
        guard let all = try? CachedBody(json: snapshot.json) else { return nil }
        var channels: [ObjectID: CachedBody] = [:]
        for (id, json) in snapshot.channelJSON {
            channels[id] = try? CachedBody(json: json)
        }
        let bodies = Bodies(version: snapshot.version, all: all, channels: channels)
        current.withLock { current in
            if (current?.version ?? 0) < bodies.version { current = bodies }
        }
        return bodies
    }
}
