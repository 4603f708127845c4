import DAO

extension HubServices {
    /// Portal sessions (a value over the database, cheap to make).
    var sessions: SessionDAO { SessionDAO(database: database) }
    /// Failed portal logins, for the throttle.
    var loginFailures: LoginFailureDAO { LoginFailureDAO(database: database) }

    /// The subjects `identity` may send to, from the latest cube in memory (the send form and the sent
    /// list offer them; sending checks the subject again).
    func sendTargets(for identity: Identity) async throws -> SendTargets {
        SendTargets(channels: try await cube.latestSnapshot().models, identity: identity)
    }
}
