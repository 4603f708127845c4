import Mongo

/// A message's three texts and its translations, as a correction finds and leaves them.
public struct MessageTexts: Sendable, Equatable {
    public var title: String, desc: String, message: String
    /// The stored `translations` document; nil: the message has none (a correction that gives none keeps them).
    public var translations: BSONDocument?

    public init(title: String, desc: String, message: String, translations: BSONDocument? = nil) {
        (self.title, self.desc, self.message, self.translations) = (title, desc, message, translations)
    }

    /// `{title, desc, message}` (and `translations` when there are some), as a correction records them.
    public var document: BSONDocument {
        var document: BSONDocument = ["title": .string(title), "desc": .string(desc), "message": .string(message)]
        if let translations { document["translations"] = .document(translations) }
        return document
    }
}

/// What the relay is to tell the phones that have a message already (a correction or its withdrawal): one more
/// component of the message's relay, and `relay.edit` one up, so that a worker holding the message learns of it.
public struct RelayNotice: Sendable {
    /// How the notice reaches a worker, by where the message stands.
    public enum Handover: Sendable {
        /// The message is done with (sent, failed, imported, or a direct message its process sent): pending again,
        /// due at `dueAt`, with no lease, for any worker to claim.
        case again
        /// A worker may be sending it, or it waits for a retry: its relay state and lease stay as they are (the
        /// worker holding it reads `relay.edit` and sends the rest as the message now is); due at `dueAt` at the
        /// latest.
        case live
        /// The process that stored it is sending it (`direct`, not yet passed by its progress): pending under a lease
        /// of that process's name until `leaseUntil`, which that process takes over as it learns of the edit; if it
        /// was done already, any worker claims it once the lease runs out.
        case fromDirect(leaseUntil: Int64)
    }

    /// The component (`RelayComponent.correction(_:)` or `.withdrawal`).
    public var component: RelayComponent
    /// When to send it, and when retries stop (Unix ms).
    public var dueAt: Int64, deadlineAt: Int64
    /// Components sent without a write (a direct message its process sent): recorded sent, so nothing is sent twice.
    public var markSent: [RelayComponent]
    public var handover: Handover

    public init(
        component: RelayComponent, dueAt: Int64, deadlineAt: Int64, markSent: [RelayComponent] = [],
        handover: Handover = .again
    ) {
        (self.component, self.dueAt, self.deadlineAt, self.markSent) = (component, dueAt, deadlineAt, markSent)
        self.handover = handover
    }

    /// Whether a worker may hold the message while the notice is stored.
    public var isLive: Bool {
        if case .again = handover { return false }
        return true
    }

    /// The fields a notice sets: its component pending, and where the relay goes (`handover`).
    var set: [(key: String, value: BSONValue)] {
        var set: [(key: String, value: BSONValue)] = [
            ("relay.components.\(component.rawValue)", ["state": "pending", "attempts": 0]),
            ("relay.due_at", .int64(dueAt)),
        ]
        switch handover {
        case .again:
            set += [("relay.state", "pending"), ("relay.deadline_at", .int64(deadlineAt))]
        case .live:
            break
        case .fromDirect(let leaseUntil):
            set += [("relay.state", "pending"), ("relay.lease_until", .int64(leaseUntil))]
        }
        for sent in markSent { set.append(("relay.components.\(sent.rawValue).state", "sent")) }
        return set
    }

    /// The lease and direct bookkeeping a notice ends (a direct message's owner and number); none while a worker
    /// may hold the message.
    var unset: BSONDocument {
        isLive ? [:] : ["relay.lease_owner": "", "relay.lease_until": "", "relay.seq": "", "relay.last_error": ""]
    }

    /// `relay.edit` one up: the workers holding the message compare it with what they read.
    static let increment: BSONDocument = ["relay.edit": .int64(1)]
}

/// What a correction does to a message's approval (`ApprovalDAO`), in the update that stores it.
public enum CorrectionApprovalStep: Sendable {
    /// The held message's request starts again on the new text: its version `version` moves one up, requested again
    /// at `requestedAt`, expiring at `expiresAt`.
    case restart(version: Int64, requestedAt: Int64, expiresAt: Int64)
    /// The correction that waited (`pending_correction`) at version `version` lands, approved by `approver`.
    case approved(version: Int64, by: String)
}

extension MessageDAO {
    /// The `relay.state` of a message withdrawn before it was sent: no worker claims it.
    public static let withdrawnRelayState = RelayStatus.withdrawn.rawValue

    /// The filter of the message `msiKey` as it was read: not withdrawn, its relay where `expected` found it
    /// (state, attempts, and a direct message's number): a claim or an outcome in between makes it miss. With
    /// `claims`, a claim in between does not (a notice to whichever worker holds it): only an outcome does.
    static func unchanged(_ msiKey: ObjectID, expected: RelayState?, claims: Bool = false) -> BSONDocument {
        var filter: BSONDocument = ["msi_key": .objectID(msiKey), "withdrawn": ["$exists": false]]
        guard let expected else {
            filter["relay"] = ["$exists": false]
            return filter
        }
        filter["relay.state"] = .string(expected.status.rawValue)
        if !claims { filter["relay.attempts"] = .int64(expected.attempts) }
        if let direct = expected.direct { filter["relay.seq"] = .int64(direct.seq) }
        return filter
    }

    /// Replaces the texts of the message `msiKey` with `after` and appends `{at, by, before, after}` to its
    /// `corrections` (the `corrections.<count>` slot still free: two corrections at once never both land), and with a
    /// `notice` makes its relay send it: one update, while the message is as `expected` found it. False when it was
    /// not (withdrawn, claimed, corrected meanwhile): the caller reads it again. With an `approval` step, the
    /// approval moves in the same update (and only while its version is as named).
    /// - Throws: `DAOError`.
    public func correct(
        msiKey: ObjectID, expected: RelayState?, corrections count: Int, at: Int64, by: String,
        before: MessageTexts, after: MessageTexts, notice: RelayNotice?,
        approval: CorrectionApprovalStep? = nil
    ) async throws -> Bool {
        var filter = Self.unchanged(msiKey, expected: expected, claims: notice?.isLive ?? false)
        filter["corrections.\(count)"] = ["$exists": false]
        var set: [(key: String, value: BSONValue)] = [
            ("title", .string(after.title)), ("desc", .string(after.desc)), ("message", .string(after.message)),
        ]
        if let translations = after.translations { set.append(("translations", .document(translations))) }
        var entry: BSONDocument = [
            "at": .int64(at), "by": .string(by), "before": .document(before.document),
            "after": .document(after.document),
        ]
        var unset: BSONDocument = notice?.unset ?? [:]
        switch approval {
        case .restart(let version, let requestedAt, let expiresAt)?:
            for element in ApprovalDAO.atVersion(version) { filter[element.key] = element.value }
            set += [
                ("approval.version", .int64(version + 1)), ("approval.requested_at", .int64(requestedAt)),
                ("approval.expires_at", .int64(expiresAt)),
            ]
        case .approved(let version, let approver)?:
            for element in ApprovalDAO.atVersion(version) { filter[element.key] = element.value }
            filter["pending_correction"] = ["$exists": true]
            entry["approved_by"] = .string(approver)
            unset["pending_correction"] = ""
        case nil:
            break
        }
        var update: BSONDocument = ["$push": ["corrections": .document(entry)]]
        if let notice {
            set += notice.set
            update["$inc"] = .document(RelayNotice.increment)
        }
        if !unset.isEmpty { update["$unset"] = .document(unset) }
        update["$set"] = .document(BSONDocument(set))
        if case .restart(_, _, let expiresAt)? = approval {
            // Held longer: its queue entry lasts as long.
            try await queues.enter(.approval, message: msiKey, expireAt: expiresAt)
        }
        let result = try await mapErrors { try await collection.updateOne(filter, update) }
        guard result.matchedCount > 0 else { return false }
        if case .approved? = approval { await queues.leave(.correction, message: msiKey) }
        return true
    }

    /// Marks the message `msiKey` withdrawn (`withdrawn: {at, by, reason}`) while it is as `expected` found it, in one
    /// update: with `cancel`, a message not sent yet (its relay `withdrawnRelayState`; the filter requires it still
    /// awaiting approval, or pending and never claimed); with a `notice`, its relay tells the phones that have it and
    /// sends nothing more of it (a worker holding it stops: `RelayNotice.Handover`).
    /// False when the message was not as expected.
    /// - Throws: `DAOError`.
    public func withdraw(
        msiKey: ObjectID, expected: RelayState?, at: Int64, by: String, reason: String?,
        cancel: Bool, notice: RelayNotice?
    ) async throws -> Bool {
        let filter = Self.unchanged(msiKey, expected: expected, claims: notice?.isLive ?? false)
        var withdrawn: BSONDocument = ["at": .int64(at), "by": .string(by)]
        if let reason { withdrawn["reason"] = .string(reason) }
        var set: [(key: String, value: BSONValue)] = [("withdrawn", .document(withdrawn))]
        // An escalation of its acknowledgement ends with it (no more re-sends).
        var update: BSONDocument = ["$unset": ["ack.next_at": ""]]
        if cancel {
            // Never claimed (the filter's `relay.attempts`: 0): no claim takes it once it is withdrawn.
            set.append(("relay.state", .string(Self.withdrawnRelayState)))
        } else if let notice {
            set += notice.set
            var unset = notice.unset
            unset["ack.next_at"] = ""
            update["$unset"] = .document(unset)
            update["$inc"] = .document(RelayNotice.increment)
        }
        update["$set"] = .document(BSONDocument(set))
        let result = try await mapErrors { try await collection.updateOne(filter, update) }
        guard result.matchedCount > 0 else { return false }
        // Held no more, escalating no more, a banner no more.
        await queues.leave([.approval, .escalation, .banner], message: msiKey)
        return true
    }
}
