import DAO
import HubTime
import Mongo

/// What a send does about the approval rule (`ApprovalPolicy`): hold the message for a second person, send it at
/// once past the rule (an admin's override, flagged for review), or neither.
struct ApprovalDecision: Sendable {
    /// The `approval` sub-document of a held message; nil when it is sent as any other.
    var request: BSONDocument?
    /// The `override` sub-document of a message an admin sent past the rule; nil: no override.
    var override: BSONDocument?

    /// Whether the message waits for approval.
    var holds: Bool { request != nil }

    /// `extra` (the message's stored additions) with the approval request or the override.
    func adding(to extra: BSONDocument) -> BSONDocument {
        var extra = extra
        if let request { extra["approval"] = .document(request) }
        if let override { extra["override"] = .document(override) }
        return extra
    }
}

extension MessageService {
    /// The most characters an override's reason has.
    public static let maximumOverrideReason = 500

    /// What `submission` by `identity` does about approval, given why the policy holds it (`reasons`).
    /// - Throws: `ApprovalRefusal` `.overrideForbidden` for an override by anyone but an admin, `.reasonRequired`
    ///   for an empty or overlong reason.
    func approvalDecision(
        _ submission: Submission, policy: ApprovalPolicy, reasons: [ApprovalPolicy.Reason],
        as identity: Identity, now: Int64
    ) throws -> ApprovalDecision {
        if let reason = submission.override {
            if let refusal = policy.overrideRefusal(for: identity) { throw refusal }
            let trimmed = ApprovalPolicy.trimmed(reason)
            guard !trimmed.isEmpty, trimmed.count <= Self.maximumOverrideReason else {
                throw ApprovalRefusal(
                    .reasonRequired,
                    "the field \"override\" must give a reason of 1 to \(Self.maximumOverrideReason) characters")
            }
            return ApprovalDecision(override: ApprovalDAO.override(by: identity.name, reason: trimmed, at: now))
        }
        guard !reasons.isEmpty else { return ApprovalDecision() }
        return ApprovalDecision(
            request: ApprovalDAO.request(
                by: identity.name, author: identity.person, at: now, expiresAt: now + policy.timeout.milliseconds,
                reasons: reasons.map(\.rawValue)))
    }
}
