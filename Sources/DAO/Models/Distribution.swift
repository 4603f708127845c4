/// How a subject's messages reach phones (the subject's `opt.distribution`).
public enum Distribution: String, Sendable, CaseIterable, Codable {
    /// A push notification plus the message in the app.
    case alert = "Alert"
    /// The message in the app only, delivered silently.
    case information = "Information"
}

/// Whether phones subscribe to a subject by themselves (the subject's `opt.level`).
public enum SubscriptionLevel: String, Sendable, CaseIterable, Codable {
    /// Subscribed automatically; cannot unsubscribe.
    case forced = "Forced"
    /// Subscribed automatically; may unsubscribe.
    case recommended = "Recommended"
    /// Not subscribed automatically.
    case optional = ""
}
