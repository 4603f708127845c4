import DAO
import Mongo

extension AuditLog {
    /// How often a throttled address is recorded at most: one entry per address a minute, whatever the replica.
    static let throttledLoginWindowMS: Int64 = 60_000

    /// Records a login refused past the throttle (`login.throttled` on the username, with the address), at most once
    /// per address and minute across replicas, so that a guesser hammering the hub cannot flood the chain.
    func recordThrottledLogin(username: String, address: String) async {
        let granted =
            (try? await rates.take(
                1, of: "audit.login.throttled:" + address, limit: 1,
                windowMS: Self.throttledLoginWindowMS
            ).granted) ?? 1
        guard granted > 0 else { return }
        await record(
            action: "login.throttled", target: AuditTarget(kind: "user", id: String(username.prefix(64))),
            change: ["address": .string(address)])
    }
}
