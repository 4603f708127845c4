/// Whether phones subscribe to a subject by themselves (the subject's `opt.level`).
public enum SubscriptionLevel: String, Sendable, CaseIterable, Codable {
    /// Subscribed automatically; cannot unsubscribe.
    case forced = "Forced"
    /// Subscribed automatically; may unsubscribe.
    case recommended = "Recommended"
    /// Not subscribed automatically.
    case optional = ""
}
