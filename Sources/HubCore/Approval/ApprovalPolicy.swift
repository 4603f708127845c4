import DAO
import HubModel

/// Which sends need a second person before they reach phones, the one rule POST /message and the portal's send form
/// follow, and who may be that person.
///
/// A message needs approval when an admin marked its subject, area or channel `"approval": "required"`, and, once an
/// admin turned the default rules on (`defaults`, off on a new or migrated deployment, so that a legacy client's
/// POST /message stays 201 and relayed), when it goes to a Forced subject (every phone of the school has it), when
/// its `urgency` is critical, or when its audience (every group's members and the persons named, summed) is larger
/// than `groupSize`. A sample of a topic counts as the topic. The request expires after `timeout`. The approver is
/// another user (never an API token, never the author, never the owner of the token that sent it) who may send there
/// (the same access rule as the send); admins may always. The rules in force are stored (`ApprovalRules`).
public struct ApprovalPolicy: Sendable {
    /// Why a message needs approval (stored in `approval.reasons`).
    public enum Reason: String, Sendable, CaseIterable {
        /// Its subject is Forced: every phone has it.
        case forcedSubject = "forced_subject"
        /// Its urgency is critical, or its escalation re-sends it critical.
        case critical
        /// Its audience (its groups' members and the persons named, summed) is larger than `groupSize`.
        case largeGroup = "large_group"
        /// Its subject, area or channel is marked `"approval": "required"`.
        case markedRequired = "marked_required"
    }

    /// The default of `groupSize` (`APPROVAL_GROUP_SIZE`).
    public static let defaultGroupSize: Int64 = 500
    /// The default of `timeout` (`APPROVAL_TIMEOUT`): one hour.
    public static let defaultTimeout: Duration = .seconds(3600)
    /// The group sizes an admin may set.
    public static let groupSizes: ClosedRange<Int64> = 1...10_000_000
    /// The timeouts an admin may set, in seconds: one minute to seven days.
    public static let timeoutSeconds: ClosedRange<Int64> = 60...(7 * 24 * 3600)

    /// A group with more members than this needs approval.
    public var groupSize: Int64
    /// How long a request waits for its approval before it expires, never to be sent.
    public var timeout: Duration
    /// Whether the default rules apply (Forced subject, critical, large audience); the marks always do. Off unless
    /// an admin turns them on: a default deployment holds no message a legacy client sends.
    public var defaults: Bool

    public init(
        groupSize: Int64 = ApprovalPolicy.defaultGroupSize, timeout: Duration = ApprovalPolicy.defaultTimeout,
        defaults: Bool = false
    ) {
        self.groupSize = groupSize
        self.timeout = timeout
        self.defaults = defaults
    }

    /// Why a topic message to `location` with `urgency` needs approval; empty when it does not.
    public func reasons(location: SubjectLocation, urgency: Urgency) -> [Reason] {
        var reasons: [Reason] = []
        if defaults, location.subject.level == SubscriptionLevel.forced.rawValue { reasons.append(.forcedSubject) }
        if defaults, urgency == .critical { reasons.append(.critical) }
        if location.channel.approvalRequired || location.area.approvalRequired || location.subject.approvalRequired {
            reasons.append(.markedRequired)
        }
        return reasons
    }

    /// Why a message to `recipients` (its `groups` as stored) with `urgency` needs approval; empty when it does not.
    /// The audience is counted whole: every group's members and the persons named directly, summed (ten groups of
    /// 499 are 4,990 persons), as a cap per group would let anyone split "everyone" into small groups.
    public func reasons(recipients: Recipients, groups: [Group], urgency: Urgency) -> [Reason] {
        guard defaults else { return [] }
        var reasons: [Reason] = []
        if urgency == .critical { reasons.append(.critical) }
        if Self.audienceSize(recipients: recipients, groups: groups) > groupSize { reasons.append(.largeGroup) }
        return reasons
    }

    /// How many persons a message to `recipients` may reach: the members of every group plus the persons named
    /// directly (a person in two groups counts twice: an upper bound, read without listing members).
    public static func audienceSize(recipients: Recipients, groups: [Group]) -> Int64 {
        groups.reduce(Int64(recipients.persons.count)) { $0 + $1.memberCount }
    }

    /// The highest urgency a message reaches: its own, or one level up when its acknowledgement escalation re-sends
    /// it (`Urgency.escalated`). The rule judges this one, so a `time-sensitive` message whose re-sends go out
    /// `critical` needs what `critical` needs.
    public static func highestUrgency(_ urgency: Urgency, ack: AckRequest?) -> Urgency {
        guard let ack, ack.resend > 0 else { return urgency }
        return urgency.escalated
    }

    /// The refusal `identity` meets approving or rejecting a text written by `author` (the person who sent the
    /// message or asked for its correction: `Identity.person`), given whether it may send there (`maySend`: the
    /// send's own access rule); nil when it may.
    public func refusal(for identity: Identity, author: String, maySend: Bool) -> ApprovalRefusal? {
        if identity.kind == .token {
            return ApprovalRefusal(.needsUser, "an API token may not approve a message: a person must")
        }
        if identity.person == author {
            return ApprovalRefusal(.selfApproval, "\(identity.name) wrote this text: another person must approve it")
        }
        if !maySend && identity.role != .admin {
            return ApprovalRefusal(.accessDenied, "\(identity.name) may not send there, so may not approve it")
        }
        return nil
    }

    /// `text` without leading and trailing white space (a reason as given in a form or a body).
    public static func trimmed(_ text: String) -> String {
        String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }

    /// The refusal `identity` meets overriding the approval of its own send: only admins may.
    public func overrideRefusal(for identity: Identity) -> ApprovalRefusal? {
        identity.role == .admin
            ? nil
            : ApprovalRefusal(.overrideForbidden, "only an admin may send past the approval rule (\"override\")")
    }
}

/// Why an approval, a rejection or an override was refused: a code each adapter maps once, and a sentence.
public struct ApprovalRefusal: Error, Sendable, CustomStringConvertible {
    /// The refusals.
    public enum Code: String, Sendable {
        /// The author may not approve their own message.
        case selfApproval = "approval_self"
        /// An API token may not approve.
        case needsUser = "approval_needs_user"
        /// The approver may not send where the message goes.
        case accessDenied = "approval_access_denied"
        /// The message is not awaiting approval (approved, rejected, or never held).
        case notPending = "approval_not_pending"
        /// The request expired unapproved: it is never sent.
        case expired = "approval_expired"
        /// Only admins may override.
        case overrideForbidden = "override_forbidden"
        /// A rejection needs a reason; an override too.
        case reasonRequired = "reason_required"
        /// The approval names a version of the text that is no longer the one awaiting approval.
        case stale = "approval_stale"
        /// The approval names no version (`version` or `If-Match`).
        case versionRequired = "version_required"
        /// Only admins may change the approval rules.
        case settingsForbidden = "settings_forbidden"
        /// A group size or timeout out of range.
        case settingsInvalid = "settings_invalid"
    }

    public let code: Code
    /// A sentence for a person.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "ApprovalRefusal.\(code.rawValue): \(message)" }
}
