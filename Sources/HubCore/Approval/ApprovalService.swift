import DAO
import HubTime
import Logging
import Mongo

/// Two-person approval of held messages (`ApprovalPolicy`): what POST /message/:msiKey/approve and .../reject, GET
/// /approvals and the portal's approvals page share.
///
/// Approving makes a held message pending, due at its send time or now, and wakes the relay; rejecting marks it
/// rejected with who and why. Both are one conditional update from `awaiting_approval` before the request's
/// expiry, so two approvers racing leave one outcome and an expired request is never sent.
public struct ApprovalService: Sendable {
    let approvals: ApprovalDAO
    let messages: MessageDAO
    let cube: CubeCache
    let groups: GroupDAO
    let relay: OutboxHandoff
    let policy: ApprovalPolicy
    /// How long the relay retries a message before marking it failed (counted from the approval).
    let relayDeadline: Duration
    /// Where approvals, rejections, expiries and overrides are recorded.
    let audit: AuditLog
    let logger: Logger
    let now: UnixClock

    init(database: MongoDatabase, cube: CubeCache, relay: OutboxHandoff, policy: ApprovalPolicy,
         relayDeadline: Duration, audit: AuditLog, logger: Logger, now: @escaping UnixClock) {
        self.audit = audit
        self.logger = logger
        self.approvals = ApprovalDAO(database: database)
        self.messages = MessageDAO(database: database, now: now)
        self.cube = cube
        self.groups = GroupDAO(database: database, now: now)
        self.relay = relay
        self.policy = policy
        self.relayDeadline = relayDeadline
        self.now = now
    }

    /// The policy the hub applies (its group size and timeout).
    public var settings: ApprovalPolicy { policy }

    /// Approves the held message `msiKey` as `identity`: it is sent as if just submitted (at its `send_at` if later).
    /// - Throws: `ApprovalRefusal` (`.needsUser`, `.selfApproval`, `.accessDenied`, `.expired`, `.notPending`);
    ///   `DAOError` (`.messageNotFound`, `.unavailable`).
    public func approve(msiKey: ObjectID, as identity: Identity) async throws -> Message {
        let message = try await checked(msiKey: msiKey, as: identity)
        let now = self.now()
        let sendAt = RelayState(message: message.document)?.sendAt ?? now
        let dueAt = max(sendAt, now)
        guard let approved = try await approvals.approve(msiKey, by: identity.name, now: now, dueAt: dueAt,
                                                         deadlineAt: dueAt + relayDeadline.milliseconds) else {
            throw try await notHeld(msiKey)
        }
        relay.notify()
        await audit.record(actor: AuditActor(identity), action: "message.approve", target: Self.target(msiKey),
                           change: AuditChange.edit(before: ["state": "awaiting_approval"], after: ["state": "pending"]))
        return approved
    }

    /// Rejects the held message `msiKey` as `identity` with `reason` (required): it is never sent.
    /// - Throws: `ApprovalRefusal` as `approve`, and `.reasonRequired`; `DAOError`.
    public func reject(msiKey: ObjectID, reason: String, as identity: Identity) async throws -> Message {
        let reason = ApprovalPolicy.trimmed(reason)
        guard !reason.isEmpty, reason.count <= MessageService.maximumOverrideReason else {
            throw ApprovalRefusal(.reasonRequired,
                                  "the field \"reason\" must give 1 to \(MessageService.maximumOverrideReason) characters")
        }
        _ = try await checked(msiKey: msiKey, as: identity)
        guard let rejected = try await approvals.reject(msiKey, by: identity.name, reason: reason, now: now()) else {
            throw try await notHeld(msiKey)
        }
        await audit.record(actor: AuditActor(identity), action: "message.reject", target: Self.target(msiKey),
                           change: AuditChange.edit(before: ["state": "awaiting_approval"],
                                                    after: ["state": "rejected", "reason": .string(reason)]))
        return rejected
    }

    /// The held messages `identity` may approve (not its own, where it may send), oldest request first.
    /// - Throws: `DAOError`.
    public func awaiting(for identity: Identity) async throws -> [Message] {
        guard identity.kind == .user else { return [] }
        var mine: [Message] = []
        for message in try await approvals.awaiting(now: now()) where message.sender != identity.name {
            if try await policy.refusal(for: identity, sender: message.sender, maySend: maySend(identity, message)) == nil {
                mine.append(message)
            }
        }
        return mine
    }

    /// The messages admins sent past the approval rule and nobody has reviewed yet, newest first; empty for others.
    /// - Throws: `DAOError`.
    public func overridesToReview(for identity: Identity) async throws -> [Message] {
        guard identity.role == .admin else { return [] }
        return try await approvals.overridesToReview()
    }

    /// Marks the override of `msiKey` reviewed by the admin `identity`; false when there was none to review.
    /// - Throws: `DAOError`.
    public func markReviewed(msiKey: ObjectID, as identity: Identity) async throws -> Bool {
        guard identity.role == .admin else { return false }
        return try await approvals.markReviewed(msiKey, by: identity.name, now: now())
    }

    /// Records the requests that expired unapproved (`approval.state` expired, an audit entry each); returns how
    /// many this call recorded (of several replicas sweeping at once, each request is recorded by one). Nothing is
    /// sent either way: an expired request is refused by `approve` whether or not it was swept.
    /// - Throws: `DAOError`.
    @discardableResult
    public func expireDue() async throws -> Int {
        var recorded = 0
        for message in try await approvals.expiredUnrecorded(now: now()) {
            guard try await approvals.markExpired(message.msiKey, now: now()) else { continue }
            recorded += 1
            await audit.record(actor: .system, action: "message.approval_expire", target: Self.target(message.msiKey),
                               change: AuditChange.edit(before: ["state": "awaiting_approval"], after: ["state": "expired"]))
        }
        return recorded
    }

    /// `expireDue()` every `interval` until cancelled (the hub's background task).
    public func expireLoop(every interval: Duration = .seconds(60)) async {
        while !Task.isCancelled {
            do {
                try await expireDue()
            } catch {
                logger.warning("expired approval requests could not be recorded", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Records that an admin sent `message` past the approval rule (its `override`), after it was stored.
    public func recordOverride(_ message: Message) async {
        guard let override = message.document["override"]?.documentValue else { return }
        await audit.record(action: "message.override", target: Self.target(message.msiKey),
                           change: AuditChange.created(["reason": override["reason"] ?? "", "by": override["by"] ?? ""]))
    }

    /// The audit target of a message.
    static func target(_ msiKey: ObjectID) -> AuditTarget { AuditTarget(kind: "message", id: msiKey.hex) }

    /// The message `msiKey` once `identity` may decide on it.
    private func checked(msiKey: ObjectID, as identity: Identity) async throws -> Message {
        let message = try await messages.get(msiKey: msiKey)
        guard message.document["approval"] != nil else {
            throw ApprovalRefusal(.notPending, "the message \(msiKey.hex) does not await approval")
        }
        if let refusal = policy.refusal(for: identity, sender: message.sender,
                                        maySend: try await maySend(identity, message)) {
            throw refusal
        }
        return message
    }

    /// Why a conditional update matched nothing: the request expired (recorded once), or it is decided already.
    private func notHeld(_ msiKey: ObjectID) async throws -> ApprovalRefusal {
        let message = try await messages.get(msiKey: msiKey)
        if ApprovalState.of(message, now: now()) == .expired {
            if try await approvals.markExpired(msiKey, now: now()) {
                await audit.record(actor: .system, action: "message.approval_expire", target: Self.target(msiKey),
                                   change: AuditChange.edit(before: ["state": "awaiting_approval"], after: ["state": "expired"]))
            }
            return ApprovalRefusal(.expired, "the approval request of \(msiKey.hex) expired: it will never be sent")
        }
        return ApprovalRefusal(.notPending, "the message \(msiKey.hex) no longer awaits approval")
    }

    /// Whether `identity` may send where `message` goes, by the send's own rules.
    private func maySend(_ identity: Identity, _ message: Message) async throws -> Bool {
        if identity.role == .admin { return true }
        if let recipients = message.recipients {
            var found: [Group] = []
            for id in recipients.groups {
                if let group = try await groups.group(id: id) { found.append(group) }
            }
            return RecipientPolicy.refusal(for: identity, recipients: recipients, groups: found) == nil
        }
        do {
            return identity.maySend(through: try await cube.location(topicKey: message.topicKey).accessLists)
        } catch let error as DAOError where error.code == .topicNotFound {
            return false
        }
    }
}

/// Where a message stands with its approval, as shown (`state`).
public enum ApprovalState: String, Sendable {
    /// Held for a second person.
    case awaitingApproval = "awaiting_approval"
    /// Approved: sent as any other.
    case approved
    /// Rejected: never sent.
    case rejected
    /// Not approved in time: never sent.
    case expired

    /// The approval state of `message` at `now`; nil for a message never held.
    public static func of(_ message: Message, now: Int64) -> ApprovalState? {
        guard let approval = message.document["approval"]?.documentValue else { return nil }
        switch approval["state"]?.stringValue {
        case "approved": return .approved
        case "rejected": return .rejected
        case "expired": return .expired
        default:
            return (approval["expires_at"]?.int64Value ?? 0) > now ? .awaitingApproval : .expired
        }
    }

    /// Whether a message in this state is still hidden from everyone but its sender, admins and approvers.
    public var hidden: Bool { self != .approved }
}
