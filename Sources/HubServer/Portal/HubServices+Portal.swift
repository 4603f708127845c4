import DAO
import HubCore

extension HubServices {
    /// The subjects `identity` may send to, from the cube in memory (the send form and the sent list offer
    /// them; sending checks the subject again).
    func sendTargets(for identity: Identity) async throws -> SendTargets {
        SendTargets(channels: try await cube.cache.snapshot().channels, identity: identity)
    }
}
