/// How urgently a message must reach a person (`urgency` on a message): what the phones let through their
/// notification settings, mapped to APNs' interruption level and an Android channel by the relay, with the rules that
/// follow from it (quiet hours, escalation). One type for every layer: the archive, the approval rule and the FCM
/// mapping.
public enum Urgency: String, Sendable, CaseIterable, Codable, Comparable {
    /// Shown in the notification list without sound or lighting the screen; waits out a device's quiet hours.
    case passive
    /// An ordinary notification (the default); waits out a device's quiet hours.
    case active
    /// Breaks through Focus modes; goes through quiet hours.
    case timeSensitive = "time-sensitive"
    /// Sounds even when the phone is muted (with Apple's entitlement); goes through quiet hours.
    case critical

    /// What a message has when its sender names none, and what a stored message without `urgency` is read as.
    public static let `default` = Urgency.active

    /// The urgency of a re-send: one level up, and at least `timeSensitive` (a notice not acknowledged must not
    /// wait out quiet hours again).
    public var escalated: Urgency {
        switch self {
        case .passive, .active: .timeSensitive
        case .timeSensitive, .critical: .critical
        }
    }

    /// Whether a device's quiet hours hold the message back: passive and active messages wait; time-sensitive and
    /// critical ones go through.
    public var waitsForQuietHours: Bool { self <= .active }

    /// Whether the phone should be woken at once: active and above (APNs priority 10, Android `HIGH`).
    public var isImmediate: Bool { self != .passive }

    /// Orders the levels from passive to critical.
    public static func < (lhs: Urgency, rhs: Urgency) -> Bool {
        lhs.rank < rhs.rank
    }

    private var rank: Int {
        switch self {
        case .passive: 0
        case .active: 1
        case .timeSensitive: 2
        case .critical: 3
        }
    }
}
