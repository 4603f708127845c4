import DAO
import Mongo

/// Why a correction or a withdrawal was refused: a code each adapter maps once.
public struct EditRefusal: Error, Sendable, CustomStringConvertible {
    /// What stands in the way.
    public enum Code: String, Sendable {
        /// Only the message's sender and admins may correct or withdraw it.
        case notYours
        /// The message is withdrawn: nothing more is done with it.
        case withdrawn
        /// Other edits of the message kept landing between this one's read and its write; try again.
        case sending
        /// The message awaits approval: only its author may correct it (and the approval starts again).
        case approvalPending
    }

    public let code: Code
    /// A sentence for a person.
    public let message: String

    public init(_ code: Code, _ message: String) {
        (self.code, self.message) = (code, message)
    }

    public var description: String { "EditRefusal.\(code): \(message)" }
}

/// The new texts of a correction: each field given replaces the stored one, the others stay.
public struct MessageCorrection: Sendable {
    public var title: String?, desc: String?, message: String?
    /// The translations, read by the send rules (`translations(from:)`); nil: kept as they are.
    public var translations: BSONValue?

    public init(title: String? = nil, desc: String? = nil, message: String? = nil, translations: BSONValue? = nil) {
        (self.title, self.desc, self.message, self.translations) = (title, desc, message, translations)
    }

    /// The correction `fields` stores (a correction waiting for approval).
    init(fields: BSONDocument) {
        self.init(
            title: fields["title"]?.stringValue, desc: fields["desc"]?.stringValue,
            message: fields["message"]?.stringValue, translations: fields["translations"])
    }

    /// The fields given, as a correction waiting for approval stores them.
    var fields: BSONDocument {
        var fields: BSONDocument = [:]
        if let title { fields["title"] = .string(title) }
        if let desc { fields["desc"] = .string(desc) }
        if let message { fields["message"] = .string(message) }
        if let translations { fields["translations"] = translations }
        return fields
    }
}

/// What a correction came to: the message as stored after, and whether the new text waits for a second person
/// (a correction of a message that needed approval: the phones keep the approved text until it is approved).
public struct CorrectionResult: Sendable {
    public var message: Message
    /// True when the new text awaits approval (POST /message/:msiKey/approve names its version).
    public var awaitsApproval: Bool
}

/// Correcting and withdrawing a message (PUT and DELETE /message/:msiKey), its sender or an admin.
///
/// The approval rule holds for corrections too (`ApprovalPolicy`): a message held for approval is corrected only by
/// its author, and the request starts again on the new text (a new version, a new expiry); a correction of a message
/// that was approved waits for a second person itself (`pending_correction`), and lands when approved
/// (`approveCorrection`), told to the phones as any correction.
///
/// The phones that have a message are told through the message's own relay, as durable as the message was: a
/// correction or withdrawal adds one component to its `relay` (`correction-<n>`, `withdrawal`) in the same update
/// that stores the change, and moves `relay.edit` one up. A message sent is made pending again, due now: any relay
/// worker claims it as it claims any message (one lease, the same retries and deadline) and sends that component
/// (`MessageSender`): to the topic, or to each device the fan-out reached. A message being sent is edited at any
/// moment too, without taking it from the worker that holds it (`RelayNotice.Handover`): that worker learns of the
/// edit at once in this process (`OutboxHandoff.edited`), within a quarter of a second on another replica, stops,
/// and sends the rest as the message now is (corrected, or nothing more once withdrawn) and the notice to what it
/// reached before. The texts of a message never claimed are simply replaced (it goes out corrected); a message not
/// yet claimed (scheduled, due, or awaiting approval) that is withdrawn is never sent.
extension MessageService {
    /// How many times one edit reads the message again when another write changed it in between.
    static let editAttempts = 5

    /// Corrects the message `msiKey` as `identity` asks, and relays the correction to the phones that have it; a
    /// correction of a message that needed approval waits for a second person instead (`awaitsApproval`).
    /// - Throws: `DAOError.messageNotFound`; `EditRefusal` (`.notYours`, `.withdrawn`, `.approvalPending`, and
    ///   `.sending` when other edits kept landing first); `SendRefusal` as POST /message for the texts
    ///   (`.fieldTooLong`, `.alertNeedsDesc`, `.invalidTranslations`).
    public func correct(
        msiKey: ObjectID, with correction: MessageCorrection,
        as identity: Identity
    ) async throws -> CorrectionResult {
        for _ in 0..<Self.editAttempts {
            let (stored, state, sent) = try await editable(msiKey) { try Self.checkEditor(identity, of: $0) }
            let now = self.now()
            switch ApprovalState.of(stored, now: now) {
            case .awaitingApproval?:
                // Held: its author rewrites it, and whoever approves reads the new text.
                guard stored.document[path: "approval.author"]?.stringValue ?? stored.sender == identity.person else {
                    throw EditRefusal(
                        .approvalPending,
                        "the message awaits approval: only its author may correct it")
                }
                let timeout = try await approvalRules.current().timeout
                let restart = CorrectionApprovalStep.restart(
                    version: ApprovalDAO.version(of: stored), requestedAt: now,
                    expiresAt: now + timeout.milliseconds)
                if try await apply(correction, to: stored, state: state, sent: sent, by: identity, approval: restart) {
                    return CorrectionResult(message: try await messages.get(msiKey: msiKey), awaitsApproval: true)
                }
            case .approved?:
                // It needed a second person: so does its correction; the phones keep the approved text meanwhile.
                _ = try correctedTexts(of: stored, with: correction)
                let timeout = try await approvalRules.current().timeout
                if try await approvals.requestCorrection(
                    msiKey, expectedVersion: ApprovalDAO.version(of: stored), correction: correction.fields,
                    by: identity.name, author: identity.person, now: now, expiresAt: now + timeout.milliseconds)
                {
                    await audit?.record(
                        actor: AuditActor(identity), action: "message.correct_request",
                        target: AuditTarget(kind: "message", id: msiKey.hex),
                        change: AuditChange.created(correction.fields))
                    return CorrectionResult(message: try await messages.get(msiKey: msiKey), awaitsApproval: true)
                }
            default:
                if try await apply(correction, to: stored, state: state, sent: sent, by: identity) {
                    return CorrectionResult(message: try await messages.get(msiKey: msiKey), awaitsApproval: false)
                }
            }
        }
        throw EditRefusal(.sending, "the message changed while it was being corrected: try again")
    }

    /// Lands the correction of `msiKey` that waited at version `version`, approved by `approver`: stored and told to
    /// the phones as any correction (the corrections entry names the approver). False when no correction waits at
    /// that version any more.
    /// - Throws: `DAOError`; `EditRefusal` (`.withdrawn`, `.sending`); `SendRefusal` when the texts no longer pass
    ///   the send rules.
    func approveCorrection(msiKey: ObjectID, version: Int64, by approver: Identity) async throws -> Bool {
        for _ in 0..<Self.editAttempts {
            let stored = try await messages.get(msiKey: msiKey)
            guard let pending = stored.document["pending_correction"]?.documentValue,
                ApprovalDAO.version(of: stored) == version
            else { return false }
            guard stored.document["withdrawn"] == nil else {
                throw EditRefusal(.withdrawn, "the message \(msiKey.hex) is withdrawn")
            }
            let correction = MessageCorrection(fields: pending["fields"]?.documentValue ?? [:])
            let (state, sent) = try await relayState(of: stored)
            let by = Identity(
                name: pending["requested_by"]?.stringValue ?? stored.sender, role: approver.role,
                kind: .user)
            if try await apply(
                correction, to: stored, state: state, sent: sent, by: by,
                approval: .approved(version: version, by: approver.name))
            {
                return true
            }
        }
        throw EditRefusal(.sending, "the message changed while its correction was being approved: try again")
    }

    /// The texts `correction` gives `stored`, held to the send rules.
    /// - Throws: `SendRefusal` (`.fieldTooLong`, `.alertNeedsDesc`, `.invalidTranslations`).
    private func correctedTexts(of stored: Message, with correction: MessageCorrection) throws
        -> (submission: Submission, broadcast: Broadcast)
    {
        var broadcast = stored.broadcast
        if let value = correction.translations {
            var body: BSONDocument = ["translations": value]
            if let language = broadcast.language { body["lang"] = .string(language) }
            broadcast.translations = try Submission.broadcast(
                from: body, defaultLanguage: defaultLanguage,
                now: now()
            ).translations
            broadcast.language = broadcast.language ?? (broadcast.translations.isEmpty ? nil : defaultLanguage)
        }
        let submission = Submission(
            title: correction.title ?? stored.title, desc: correction.desc ?? stored.desc,
            message: correction.message ?? stored.message, topicKey: stored.topicKey, recipients: stored.recipients,
            data: stored.data, distribution: Distribution(rawValue: stored.distribution) ?? .information,
            broadcast: broadcast)
        if let refusal = submission.textRefusals.first ?? submission.broadcastRefusal ?? submission.alertRefusal {
            throw refusal
        }
        return (submission, broadcast)
    }

    /// Stores `correction` of `stored` (as its relay `state` was read; `sent`: phones may have it) by `identity`, with
    /// the `approval` step it takes, tells the phones and records it; false when the message changed meanwhile.
    private func apply(
        _ correction: MessageCorrection, to stored: Message, state: RelayState?, sent: Bool,
        by identity: Identity, approval: CorrectionApprovalStep? = nil
    ) async throws -> Bool {
        let (submission, broadcast) = try correctedTexts(of: stored, with: correction)
        let before = Self.texts(of: stored, translations: stored.document["translations"]?.documentValue)
        let after = MessageTexts(
            title: submission.title, desc: submission.desc, message: submission.message,
            translations: correction.translations == nil
                ? nil
                : broadcast.document["translations"]?.documentValue ?? [:])
        let count = stored.document["corrections"]?.arrayValue?.count ?? 0
        let now = self.now()
        let notice = notice(.correction(count + 1), state: state, sent: sent, now: now)
        guard
            try await messages.correct(
                msiKey: stored.msiKey, expected: state, corrections: count, at: now,
                by: identity.name, before: before, after: after, notice: notice,
                approval: approval)
        else { return false }
        tellRelay(notice, of: stored)
        var recorded = after.document
        if case .approved(_, let approver)? = approval { recorded["approved_by"] = .string(approver) }
        await audit?.record(
            actor: AuditActor(identity), action: "message.correct",
            target: AuditTarget(kind: "message", id: stored.msiKey.hex),
            change: AuditChange.edit(before: before.document, after: recorded))
        return true
    }

    /// Withdraws the message `msiKey` as `identity` asks (`reason`, optional): a message not claimed yet is
    /// cancelled (never sent), one being sent stops (what was not sent yet never is), and the phones it reached are
    /// told; either way catch-up and the active banners leave it out, and the history keeps a tombstone.
    /// - Throws: `DAOError.messageNotFound`; `EditRefusal` (`.notYours`, `.withdrawn`, and `.sending` when other
    ///   edits kept landing first).
    public func withdraw(msiKey: ObjectID, reason: String?, as identity: Identity) async throws -> Message {
        try await withdraw(msiKey: msiKey, reason: reason, by: identity.name, actor: AuditActor(identity)) {
            try Self.checkEditor(identity, of: $0)
        }
    }

    /// Withdraws the post `msiKey` of room `room` as `person` asks from their device: its author, or one of the
    /// room's managers, may (as `withdraw(msiKey:reason:as:)` otherwise; recorded as done by `device`).
    /// - Throws: `DAOError.messageNotFound` (also for a message that is no post of the room); `EditRefusal`
    ///   (`.notYours` for anyone else, `.withdrawn`, `.sending`).
    public func withdraw(
        post msiKey: ObjectID, in room: Group, by person: String, device: ObjectID, reason: String?
    ) async throws -> Message {
        try await withdraw(
            msiKey: msiKey, reason: reason, by: person, actor: AuditActor(kind: .device, name: device.hex)
        ) { stored in
            guard stored.room == room.id else {
                throw DAOError(.messageNotFound, "no post of this room has the msi_key \(msiKey.hex)")
            }
            guard stored.senderPerson == person || room.isManager(person) else {
                throw EditRefusal(.notYours, "only the post's author or a manager of the room may withdraw it")
            }
        }
    }

    /// Withdraws `msiKey` once `check` lets the caller (`name`, recorded as `actor`) edit the stored message.
    private func withdraw(
        msiKey: ObjectID, reason: String?, by name: String, actor: AuditActor,
        check: (Message) throws -> Void
    ) async throws -> Message {
        for _ in 0..<Self.editAttempts {
            let (stored, state, sent) = try await editable(msiKey, check: check)
            let now = self.now()
            // Not sent yet: held for approval, or pending and never claimed (scheduled, or due and not taken yet).
            let cancel =
                state.map { $0.status == .awaitingApproval || ($0.status == .pending && $0.attempts == 0) }
                ?? false
            let notice = cancel ? nil : notice(.withdrawal, state: state, sent: sent, now: now)
            if try await messages.withdraw(
                msiKey: msiKey, expected: state, at: now, by: name, reason: reason,
                cancel: cancel, notice: notice)
            {
                tellRelay(notice, of: stored)
                var after: BSONDocument = ["withdrawn": true, "cancelled": .bool(cancel)]
                if let reason { after["reason"] = .string(reason) }
                await audit?.record(
                    actor: actor, action: "message.withdraw",
                    target: AuditTarget(kind: "message", id: msiKey.hex),
                    change: AuditChange.edit(
                        before: ["state": .string(state?.status.rawValue ?? "sent")],
                        after: after))
                return try await messages.get(msiKey: msiKey)
            }
        }
        throw EditRefusal(.sending, "the message changed while it was being withdrawn: try again")
    }

    /// The notice that an edit (its `component`) of a message stores, by its relay `state` as read (`sent`: phones
    /// may have it), or nil when none is needed: a message never claimed goes out as it now is, or never.
    private func notice(_ component: RelayComponent, state: RelayState?, sent: Bool, now: Int64) -> RelayNotice? {
        guard let state else { return nil }
        let deadline = now + relayDeadline.milliseconds
        if sent {
            // Done with: any worker sends the notice (a direct message's components went without a write).
            return RelayNotice(
                component: component, dueAt: now, deadlineAt: deadline,
                markSent: state.direct == nil ? [] : state.order)
        }
        switch state.status {
        case .pending where state.attempts > 0:
            // Claimed, or waiting for a retry: whoever holds it goes on with it as it now is.
            return RelayNotice(component: component, dueAt: now, deadlineAt: deadline, handover: .live)
        case .direct:
            return RelayNotice(
                component: component, dueAt: now, deadlineAt: deadline,
                handover: .fromDirect(leaseUntil: now + relayLease.milliseconds))
        default:
            return nil
        }
    }

    /// Staff may edit a message they sent; admins any.
    /// - Throws: `EditRefusal.notYours`.
    private static func checkEditor(_ identity: Identity, of stored: Message) throws {
        guard identity.role == .admin || identity.name == stored.sender else {
            throw EditRefusal(.notYours, "only the message's sender or an admin may change it")
        }
    }

    /// Tells this process's relay of a `notice` stored for `message`: the worker holding it stops at once, and one
    /// done with it claims it soon.
    private func tellRelay(_ notice: RelayNotice?, of message: Message) {
        guard notice != nil else { return }
        relay.edited(message.id)
        relay.notify()
    }

    /// The message `msiKey` if `identity` may edit it, its relay state as stored, and whether phones may have it
    /// (some component went out: sent, failed after others, imported, or a direct message its process sent).
    private func editable(_ msiKey: ObjectID, check: (Message) throws -> Void) async throws
        -> (Message, RelayState?, Bool)
    {
        let stored = try await messages.get(msiKey: msiKey)
        try check(stored)
        guard stored.document["withdrawn"] == nil else {
            throw EditRefusal(.withdrawn, "the message \(msiKey.hex) is withdrawn")
        }
        let (state, sent) = try await relayState(of: stored)
        return (stored, state, sent)
    }

    /// The relay state of `stored` and whether phones may have it.
    private func relayState(of stored: Message) async throws -> (RelayState?, Bool) {
        let state = RelayState(message: stored.document)
        let sent: Bool
        switch state?.status {
        case .sent?, .failed?, .imported?: sent = true
        case .direct?:
            sent = try await progress.resolved([stored])[0].document[path: "relay.state"]?.stringValue == "sent"
        // Pending: not claimed yet (it goes out as corrected), or being sent or retried (its worker sends the rest as
        // the message now is).
        default: sent = false
        }
        return (state, sent)
    }

    /// The texts of `message` as a correction records them.
    static func texts(of message: Message, translations: BSONDocument?) -> MessageTexts {
        MessageTexts(title: message.title, desc: message.desc, message: message.message, translations: translations)
    }
}
