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
    let messageDAO: MessageDAO
    /// Lands an approved correction as any correction (stored, told to the phones).
    let messages: MessageService
    let cube: CubeCache
    let groups: GroupDAO
    let relay: OutboxHandoff
    /// The rules in force, as an admin stored them.
    public let rules: ApprovalRules
    /// How long the relay retries a message before marking it failed (counted from the approval).
    let relayDeadline: Duration
    /// Where approvals, rejections, expiries and overrides are recorded.
    let audit: AuditLog
    let logger: Logger
    let now: UnixClock

    init(
        database: MongoDatabase, messages: MessageService, cube: CubeCache, relay: OutboxHandoff, rules: ApprovalRules,
        relayDeadline: Duration, audit: AuditLog, logger: Logger, now: @escaping UnixClock
    ) {
        self.audit = audit
        self.logger = logger
        self.approvals = ApprovalDAO(database: database)
        self.messageDAO = MessageDAO(database: database, now: now)
        self.messages = messages
        self.cube = cube
        self.groups = GroupDAO(database: database, now: now)
        self.relay = relay
        self.rules = rules
        self.relayDeadline = relayDeadline
        self.now = now
    }

    /// The rules in force (whether the default rules hold messages, the group size, the timeout).
    /// - Throws: `DAOError` when they cannot be read.
    public func settings() async throws -> ApprovalPolicy {
        try await rules.current()
    }

    /// Stores `policy` as the rules every replica applies, as the admin `identity`, and records the change in the
    /// audit log (`settings.approval`). Messages already held stay held; the new rules apply to later sends.
    /// - Throws: `ApprovalRefusal` `.settingsForbidden` for anyone but an admin user, `.settingsInvalid` for a group
    ///   size or timeout out of range; `DAOError`.
    public func updateSettings(_ policy: ApprovalPolicy, as identity: Identity) async throws {
        guard identity.role == .admin else {
            throw ApprovalRefusal(.settingsForbidden, "only an admin may change the approval rules")
        }
        guard ApprovalPolicy.groupSizes.contains(policy.groupSize) else {
            throw ApprovalRefusal(
                .settingsInvalid,
                "the group size must be \(ApprovalPolicy.groupSizes.lowerBound) to "
                    + "\(ApprovalPolicy.groupSizes.upperBound) persons")
        }
        guard ApprovalPolicy.timeoutSeconds.contains(policy.timeout.components.seconds) else {
            throw ApprovalRefusal(.settingsInvalid, "the timeout must be 1 minute to 7 days")
        }
        let before = try await rules.current()
        try await rules.store(policy, by: identity.name, now: now())
        await audit.record(
            actor: AuditActor(identity), action: "settings.approval",
            target: AuditTarget(kind: "settings", id: "approval"),
            change: AuditChange.edit(before: Self.auditFields(before), after: Self.auditFields(policy)))
    }

    /// The fields of the rules as the audit log records them.
    static func auditFields(_ policy: ApprovalPolicy) -> BSONDocument {
        [
            "defaults": .bool(policy.defaults), "group_size": .int64(policy.groupSize),
            "timeout_seconds": .int64(policy.timeout.components.seconds),
        ]
    }

    /// Approves version `version` of what waits on `msiKey` as `identity`: a held message is sent as if just submitted
    /// (at its `send_at` if later); a correction of an approved message lands and goes to the phones. The version is
    /// the one the approver read (`approval.version`): an approval of any other is refused, so no text is ever
    /// approved unseen.
    /// - Throws: `ApprovalRefusal` (`.needsUser`, `.selfApproval`, `.accessDenied`, `.expired`, `.notPending`,
    ///   `.stale`, `.versionRequired` when `version` is nil); `EditRefusal` (`.withdrawn`, `.sending`) for a
    ///   correction; `DAOError` (`.messageNotFound`, `.unavailable`).
    public func approve(msiKey: ObjectID, version: Int64?, as identity: Identity) async throws -> Message {
        let message = try await checked(msiKey: msiKey, as: identity)
        guard let version else {
            throw ApprovalRefusal(
                .versionRequired,
                "an approval names the version of the text it approves "
                    + "(version \(ApprovalDAO.version(of: message)) awaits): {\"version\": n} or If-Match")
        }
        let now = self.now()
        if ApprovalState.of(message, now: now) == .approved, message.document["pending_correction"] != nil {
            return try await approveCorrection(message, version: version, as: identity)
        }
        guard ApprovalDAO.version(of: message) == version else { throw Self.stale(msiKey, message) }
        let sendAt = RelayState(message: message.document)?.sendAt ?? now
        let dueAt = max(sendAt, now)
        guard
            let approved = try await approvals.approve(
                msiKey, version: version, by: identity.name, now: now,
                dueAt: dueAt, deadlineAt: dueAt + relayDeadline.milliseconds)
        else {
            throw try await notHeld(msiKey, version: version)
        }
        relay.notify()
        await audit.record(
            actor: AuditActor(identity), action: "message.approve", target: Self.target(msiKey),
            change: AuditChange.edit(
                before: ["state": "awaiting_approval"],
                after: ["state": "pending", "version": .int64(version)]))
        return approved
    }

    /// Lands the correction waiting on `message` at `version`, approved by `identity`.
    private func approveCorrection(_ message: Message, version: Int64, as identity: Identity) async throws -> Message {
        let msiKey = message.msiKey
        guard ApprovalDAO.version(of: message) == version else { throw Self.stale(msiKey, message) }
        if (message.document[path: "pending_correction.expires_at"]?.int64Value ?? 0) <= now() {
            throw ApprovalRefusal(.expired, "the correction of \(msiKey.hex) was not approved in time: ask again")
        }
        guard try await messages.approveCorrection(msiKey: msiKey, version: version, by: identity) else {
            throw Self.stale(msiKey, try await messageDAO.get(msiKey: msiKey))
        }
        await audit.record(
            actor: AuditActor(identity), action: "message.approve", target: Self.target(msiKey),
            change: AuditChange.edit(
                before: ["state": "correction_awaiting_approval"],
                after: ["state": "corrected", "version": .int64(version)]))
        return try await messageDAO.get(msiKey: msiKey)
    }

    /// The refusal of an approval of a version that is not the one awaiting approval in `message`.
    static func stale(_ msiKey: ObjectID, _ message: Message) -> ApprovalRefusal {
        ApprovalRefusal(
            .stale,
            "version \(ApprovalDAO.version(of: message)) of \(msiKey.hex) is the one awaiting "
                + "approval, not the one approved: read it again")
    }

    /// Rejects what waits on `msiKey` as `identity` with `reason` (required): a held message is never sent; a
    /// correction of an approved message is dropped (the phones keep the approved text).
    /// - Throws: `ApprovalRefusal` as `approve`, and `.reasonRequired`; `DAOError`.
    public func reject(msiKey: ObjectID, reason: String, as identity: Identity) async throws -> Message {
        let reason = ApprovalPolicy.trimmed(reason)
        guard !reason.isEmpty, reason.count <= MessageService.maximumOverrideReason else {
            throw ApprovalRefusal(
                .reasonRequired,
                "the field \"reason\" must give 1 to \(MessageService.maximumOverrideReason) characters")
        }
        let message = try await checked(msiKey: msiKey, as: identity)
        if ApprovalState.of(message, now: now()) == .approved, message.document["pending_correction"] != nil {
            let version = ApprovalDAO.version(of: message)
            guard
                try await approvals.rejectCorrection(
                    msiKey, version: version, by: identity.name, reason: reason,
                    now: now())
            else {
                throw ApprovalRefusal(.notPending, "the correction of \(msiKey.hex) no longer awaits approval")
            }
            await audit.record(
                actor: AuditActor(identity), action: "message.reject", target: Self.target(msiKey),
                change: AuditChange.edit(
                    before: ["state": "correction_awaiting_approval"],
                    after: [
                        "state": "correction_rejected",
                        "reason": .string(reason),
                    ]))
            return try await messageDAO.get(msiKey: msiKey)
        }
        guard let rejected = try await approvals.reject(msiKey, by: identity.name, reason: reason, now: now()) else {
            throw try await notHeld(msiKey, version: nil)
        }
        await audit.record(
            actor: AuditActor(identity), action: "message.reject", target: Self.target(msiKey),
            change: AuditChange.edit(
                before: ["state": "awaiting_approval"],
                after: ["state": "rejected", "reason": .string(reason)]))
        return rejected
    }

    /// The held messages and corrections `identity` may approve (not its own, where it may send), oldest request
    /// first.
    /// - Throws: `DAOError`.
    public func awaiting(for identity: Identity) async throws -> [Message] {
        guard identity.kind == .user else { return [] }
        let policy = try await rules.current()
        let now = self.now()
        var mine: [Message] = []
        for message in try await approvals.awaiting(now: now) + approvals.correctionsAwaiting(now: now) {
            if try await policy.refusal(
                for: identity, author: Self.author(of: message, now: now),
                maySend: maySend(identity, message)) == nil
            {
                mine.append(message)
            }
        }
        return mine
    }

    /// The person who wrote the text awaiting approval in `message`: the author of its correction when one waits,
    /// else the person who sent it (`approval.author`; its sender for a request stored before authors).
    static func author(of message: Message, now: Int64) -> String {
        if ApprovalState.of(message, now: now) == .approved,
            let author = message.document[path: "pending_correction.author"]?.stringValue
        {
            return author
        }
        return message.document[path: "approval.author"]?.stringValue ?? message.sender
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
            await audit.record(
                actor: .system, action: "message.approval_expire", target: Self.target(message.msiKey),
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
        await audit.record(
            action: "message.override", target: Self.target(message.msiKey),
            change: AuditChange.created(["reason": override["reason"] ?? "", "by": override["by"] ?? ""]))
    }

    /// The audit target of a message.
    static func target(_ msiKey: ObjectID) -> AuditTarget { AuditTarget(kind: "message", id: msiKey.hex) }

    /// The message `msiKey` once `identity` may decide on it.
    private func checked(msiKey: ObjectID, as identity: Identity) async throws -> Message {
        let message = try await messageDAO.get(msiKey: msiKey)
        guard message.document["approval"] != nil else {
            throw ApprovalRefusal(.notPending, "the message \(msiKey.hex) does not await approval")
        }
        if let refusal = try await rules.current().refusal(
            for: identity, author: Self.author(of: message, now: now()),
            maySend: try await maySend(identity, message))
        {
            throw refusal
        }
        return message
    }

    /// Why a conditional update matched nothing: the request expired (recorded once), its text changed since
    /// `version` was read, or it is decided already.
    private func notHeld(_ msiKey: ObjectID, version: Int64?) async throws -> ApprovalRefusal {
        let message = try await messageDAO.get(msiKey: msiKey)
        if ApprovalState.of(message, now: now()) == .expired {
            if try await approvals.markExpired(msiKey, now: now()) {
                await audit.record(
                    actor: .system, action: "message.approval_expire", target: Self.target(msiKey),
                    change: AuditChange.edit(before: ["state": "awaiting_approval"], after: ["state": "expired"]))
            }
            return ApprovalRefusal(.expired, "the approval request of \(msiKey.hex) expired: it will never be sent")
        }
        if let version, ApprovalState.of(message, now: now()) == .awaitingApproval,
            ApprovalDAO.version(of: message) != version
        {
            return Self.stale(msiKey, message)
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
