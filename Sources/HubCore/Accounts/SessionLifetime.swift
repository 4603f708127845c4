import HubTime

/// How long a portal session lasts: `idle` after its last request, and never longer than `maximum` after the
/// login, however active (a stolen cookie stops working by then).
public struct SessionLifetime: Sendable {
    /// How long a session lasts without a request.
    public var idle: Duration
    /// How long a session lasts at most after the login.
    public var maximum: Duration

    public init(idle: Duration, maximum: Duration) {
        self.idle = idle
        self.maximum = maximum
    }

    /// `idle` in whole milliseconds.
    var idleMS: Int64 { idle.milliseconds }
    /// `maximum` in whole milliseconds.
    var maximumMS: Int64 { maximum.milliseconds }
}
