import DAO

extension HubServices {
    /// Portal sessions (a value over the database, cheap to make).
    var sessions: SessionDAO { SessionDAO(database: database) }
    /// Failed portal logins, for the throttle.
    var loginFailures: LoginFailureDAO { LoginFailureDAO(database: database) }
}
