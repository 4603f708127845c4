import DAO

/// Which sends need a second person before they reach phones, the one rule POST /message and the portal's send form
/// follow, and who may be that person.
///
/// By default a message needs approval when it goes to a Forced subject (every phone of the school has it), when its
/// `urgency` is critical, when it goes to a group of more than `groupSize` members (`APPROVAL_GROUP_SIZE`: the hub's
/// "everyone" send, as there is no send to a whole channel's subjects), or when an admin marked its subject, area or
/// channel `"approval": "required"`. A sample of a topic counts as the topic. The request expires after `timeout`
/// (`APPROVAL_TIMEOUT`). The approver is another user (never an API token, never the author) who may send there
/// (the same access rule as the send); admins may always. With `defaults` off (`APPROVAL_DEFAULTS=off`) only the
/// marked channels, areas and subjects hold messages.
public struct ApprovalPolicy: Sendable {
    /// Why a message needs approval (stored in `approval.reasons`).
    public enum Reason: String, Sendable, CaseIterable {
        /// Its subject is Forced: every phone has it.
        case forcedSubject = "forced_subject"
        /// Its urgency is critical.
        case critical
        /// One of its groups has more than `groupSize` members.
        case largeGroup = "large_group"
        /// Its subject, area or channel is marked `"approval": "required"`.
        case markedRequired = "marked_required"
    }

    /// The default of `groupSize` (`APPROVAL_GROUP_SIZE`).
    public static let defaultGroupSize: Int64 = 500
    /// The default of `timeout` (`APPROVAL_TIMEOUT`): one hour.
    public static let defaultTimeout: Duration = .seconds(3600)

    /// A group with more members than this needs approval.
    public var groupSize: Int64
    /// How long a request waits for its approval before it expires, never to be sent.
    public var timeout: Duration
    /// Whether the default rules apply (Forced subject, critical, large group); the marks always do.
    public var defaults: Bool

    public init(groupSize: Int64 = ApprovalPolicy.defaultGroupSize, timeout: Duration = ApprovalPolicy.defaultTimeout,
                defaults: Bool = true) {
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

    /// Why a message to persons and `groups` (as stored) with `urgency` needs approval; empty when it does not.
    public func reasons(groups: [Group], urgency: Urgency) -> [Reason] {
        guard defaults else { return [] }
        var reasons: [Reason] = []
        if urgency == .critical { reasons.append(.critical) }
        if groups.contains(where: { $0.memberCount > groupSize }) { reasons.append(.largeGroup) }
        return reasons
    }

    /// The refusal `identity` meets approving or rejecting a message of `sender`, given whether it may send there
    /// (`maySend`: the send's own access rule); nil when it may.
    public func refusal(for identity: Identity, sender: String, maySend: Bool) -> ApprovalRefusal? {
        if identity.kind == .token {
            return ApprovalRefusal(.needsUser, "an API token may not approve a message: a person must")
        }
        if identity.name == sender {
            return ApprovalRefusal(.selfApproval, "\(identity.name) sent this message: another person must approve it")
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
        identity.role == .admin ? nil
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
