import DAO
import HubModel
import HubTime
import Mongo

/// Sending and reading messages: what POST /message, the portal's send form and the history routes share
/// once each has read its request.
///
/// Sending holds the fields to the send rules (`Submission.refusals`), finds the subject, checks the distribution,
/// the Alert's body and the sender's access, stores the message with its relay plan and wakes the relay.
public struct MessageService: Sendable {
    let messages: MessageDAO
    let idempotencyKeys: IdempotencyKeyDAO
    let cube: CubeCache
    /// The groups a message may be addressed to, read for their access lists.
    let groups: GroupDAO
    /// This process's relay, which sends what this process stores without claiming it.
    let relay: OutboxHandoff
    /// The relay workers' progress, which says whether a message they sent themselves is sent.
    let progress: RelayProgressDAO
    /// The bound on the relay's backlog: past it nothing new is stored.
    let backlog: RelayBacklog
    /// How long the relay retries a message before marking it failed.
    let relayDeadline: Duration
    /// The lease under which an edit hands a message its storing process is sending to the outbox
    /// (`RelayNotice.Handover.fromDirect`): that process takes it over well within it, or, done already, leaves it
    /// to any worker once it runs out. The relay's default lease.
    var relayLease: Duration = .seconds(5)
    /// The clock (Unix ms) that dates a send and says which messages a reader may see yet.
    let now: UnixClock
    /// The language of a message's own texts when it has translations and names none (`DEFAULT_LANGUAGE`).
    var defaultLanguage = LocaleLanguage.defaultLanguage
    /// Which sends wait for a second person's approval: the rules an admin stored.
    let approvalRules: ApprovalRules
    /// Corrections of approved messages that wait for a second person.
    let approvals: ApprovalDAO
    /// Where every stored send is recorded (`message.send`); nil: not recorded (a service built alone in a test).
    var audit: AuditLog?

    /// The presentation fields of a request's body, held to their rules (`Submission.broadcast(from:...)`) with this
    /// hub's default language and clock: what POST /message and the portal's form read.
    public func broadcast(from body: BSONDocument) throws -> Broadcast {
        try Submission.broadcast(from: body, defaultLanguage: defaultLanguage, now: now())
    }

    /// A message as a client asked for it, its fields read by the adapter; `send` holds them to the send rules
    /// (`refusals`).
    public struct Submission: Sendable {
        public var title: String
        public var desc: String
        public var message: String
        /// The subject's topic; "" when the message goes to `recipients`.
        public var topicKey: String
        /// The persons and groups to send to instead of a topic (`to`).
        public var recipients: Recipients?
        /// String values the app receives with the message (`MessageData`).
        public var data: [String: String]
        public var distribution: Distribution
        /// How urgently it must reach phones (`Urgency.named(_:)` reads the wire's value).
        public var urgency: Urgency
        /// Seconds FCM keeps it for phones that are offline; nil: FCM's default.
        public var ttl: Int64?
        /// When to send it (Unix ms); nil: now.
        public var sendAt: Int64?
        /// The acknowledgement asked of its recipients (`ack`, read by `ack(from:)`); nil: none.
        public var ack: AckRequest?
        /// Its languages, poster, kind, expiry, display and sample (read by `broadcast(from:defaultLanguage:now:)`).
        public var broadcast: Broadcast
        /// An admin's reason to send at once past the approval rule (`override`), flagged for review; nil: none.
        public var override: String?
        /// An admin's `override_preferences`: the message goes past its recipients' digests, `off`, mutes and quiet
        /// hours (`PreferencePolicy`). The hub also marks every Alert of a Forced subject so.
        public var overridePreferences = false

        /// The highest urgency the message reaches, its escalation's re-sends included (what the approval rule judges).
        var highestUrgency: Urgency { ApprovalPolicy.highestUrgency(urgency, ack: ack) }

        public init(
            title: String, desc: String, message: String, topicKey: String, recipients: Recipients? = nil,
            data: [String: String] = [:], distribution: Distribution, urgency: Urgency = .default,
            ttl: Int64? = nil, sendAt: Int64? = nil, ack: AckRequest? = nil, broadcast: Broadcast = Broadcast()
        ) {
            self.ack = ack
            self.broadcast = broadcast
            self.urgency = urgency
            self.title = title
            self.desc = desc
            self.message = message
            self.topicKey = topicKey
            self.recipients = recipients
            self.data = data
            self.distribution = distribution
            self.ttl = ttl
            self.sendAt = sendAt
        }
    }

    /// Stores `submission` as sent by `identity` and hands it to the relay. With an `idempotencyKey`, a request
    /// that repeats an earlier one of the sender (same key, same submission) stores nothing new and returns the
    /// earlier request's message (`store(_:idempotencyKey:fingerprint:sender:)`).
    /// - Throws: `SendRefusal` (`.fieldTooLong`, `.emptyField`, `.topicNotFound`, `.distributionMismatch`,
    ///   `.alertNeedsDesc`, `.accessDenied`, `.idempotencyKeyReused`), the first the submission meets in that order;
    ///   `DAOError` when the database fails: `.unavailable` when the message is known not to be stored,
    ///   `.outcomeUnknown` when that could not be settled before the write deadline.
    public func send(_ submission: Submission, as identity: Identity, idempotencyKey: String? = nil) async throws
        -> Message
    {
        let location: SubjectLocation
        switch try await destination(of: submission, as: identity) {
        case .recipients(let recipients, let groups):
            return try await send(
                submission, to: recipients, groups: groups, as: identity, idempotencyKey: idempotencyKey)
        case .subject(let found):
            location = found
        }
        let now = self.now()
        // A sample of a topic counts as the topic.
        let policy = try await approvalRules.current()
        let approval = try approvalDecision(
            submission, policy: policy,
            reasons: policy.reasons(
                location: location, urgency: submission.highestUrgency), as: identity, now: now)
        let dueAt = max(submission.sendAt ?? now, now)
        let sampled = submission.broadcast.sample != nil
        let ticket = ticket(for: .topic(dueAt: dueAt, sampled: sampled, held: approval.holds), now: now)
        let plan = RelayPlan(
            dueAt: dueAt, sendAt: submission.sendAt.map { _ in dueAt },
            expiresAt: submission.expiry(dueAt: dueAt), ttlSeconds: submission.ttl,
            deadlineAt: dueAt + relayDeadline.milliseconds, direct: ticket, addressed: sampled,
            languages: submission.broadcast.translations.map(\.language),
            display: submission.broadcast.display, awaitsApproval: approval.holds)
        return try await handing(ticket) {
            try await store(
                MessageDraft(
                    title: submission.title, desc: submission.desc, message: submission.message,
                    topicKey: submission.topicKey,
                    data: submission.data, distribution: submission.distribution, urgency: submission.urgency,
                    broadcast: submission.broadcast, sender: identity.name,
                    extra: approval.adding(
                        to: submission.extra(
                            relay: plan,
                            forcedAlert: submission.distribution == .alert
                                && location.subject.level == SubscriptionLevel.forced.rawValue))),
                idempotencyKey: idempotencyKey, fingerprint: submission.fingerprint, sender: identity.name)
        }
    }

    /// A new message as the decision whether it is sent from memory sees it.
    enum FirstSend {
        /// A message to a topic (or a sample of one), due at `dueAt`, `held` for approval or not.
        case topic(dueAt: Int64, sampled: Bool, held: Bool)
        /// A message to persons, groups or a room (a staff message, a member's post), due at `dueAt`, `held` for
        /// approval or not, reaching at most `persons` persons (those named and the groups' members together).
        case addressed(dueAt: Int64, held: Bool, persons: Int64)
    }

    /// The most persons a message to persons and groups may reach for the process that stores it to send it from
    /// memory (as a topic message is): a conversation's, a reminder's or a staff message's first sends then wait for
    /// no claim, and the archive takes no write for the claim, the start or the outcome. A larger fan-out lasts long
    /// enough to hold back its worker's progress record (every message stored after it is shown pending until it
    /// ends, and sent again if the process dies meanwhile): it is claimed by whichever worker takes it.
    public static let directFanOutPersons: Int64 = 2_000

    /// Whether this process's relay sends a new message from its insert on, from memory (a ticket to store it
    /// `.direct` under), or whichever worker claims it does (nil): the one place that decides it. From memory: a
    /// message due now and not held for approval, to a topic (not a sample, which goes device by device) or to at
    /// most `directFanOutPersons` persons; always when the relay can take one (`relay.ticket`).
    func ticket(for message: FirstSend, now: Int64) -> DirectRelay? {
        let fromMemory =
            switch message {
            case .topic(let dueAt, let sampled, let held): dueAt <= now && !sampled && !held
            case .addressed(let dueAt, let held, let persons):
                dueAt <= now && !held && persons <= Self.directFanOutPersons
            }
        return fromMemory ? relay.ticket(now: now) : nil
    }

    /// Stores a message (`store`) and gives it to the relay: with `ticket` (stored `.direct`), to this process's
    /// worker in memory, which sends it at once; without, a wake-up for whichever worker claims it. Every ticket comes
    /// back to the relay, whatever the insert came to: handed over, not stored, or unsettled when its outcome is unknown.
    /// - Throws: what `store` throws.
    func handing(_ ticket: DirectRelay?, _ store: () async throws -> Message) async throws -> Message {
        let message: Message
        do {
            message = try await store()
        } catch let error as DAOError where error.code == .outcomeUnknown {
            if let ticket { relay.unsettled(ticket) }
            throw error
        } catch {
            if let ticket { relay.notStored(ticket) }
            throw error
        }
        guard let ticket else {
            relay.notify()
            return message
        }
        guard relay.handOff(message, ticket: ticket) else { return message }  // an earlier request's, claimed
        // Shown as any message waiting to be sent: the worker's name and number are its bookkeeping.
        return Message(document: RelayProgressDAO.shown(message.document, sent: false)) ?? message
    }

    /// Where a submission goes, once held to the send rules: a subject, or persons and groups (each once, in the
    /// order given, with the groups found).
    public enum Destination: Sendable {
        case subject(SubjectLocation)
        case recipients(Recipients, [Group])
    }

    /// Holds `submission` to the send rules for `identity` without storing anything (what `send` checks first, and
    /// what an event checks when it is created or edited): its fields, its subject's distribution and access, or its
    /// groups and `RecipientPolicy`.
    /// - Throws: `SendRefusal` as `send`; `DAOError`.
    public func destination(of submission: Submission, as identity: Identity) async throws -> Destination {
        if let refusal = submission.fieldRefusals.first { throw refusal }
        if submission.overridePreferences, identity.role != .admin {
            throw SendRefusal(
                .overridePreferencesForbidden,
                "only an admin may send past the recipients' preferences (\"override_preferences\")")
        }
        if let recipients = submission.recipients {
            if let refusal = submission.alertRefusal { throw refusal }
            // Each person and group once, in the order given.
            var seen = Set<String>()
            let recipients = Recipients(
                persons: recipients.persons.filter { seen.insert("p" + $0).inserted },
                groups: recipients.groups.filter { seen.insert("g" + $0).inserted },
                exceptPersons: recipients.exceptPersons.filter { seen.insert("x" + $0).inserted })
            var found: [Group] = []
            for id in recipients.groups {
                guard let group = try await groups.group(id: id) else {
                    throw SendRefusal(.groupNotFound, "no group has the id \(id)")
                }
                found.append(group)
            }
            if let refusal = RecipientPolicy.refusal(for: identity, recipients: recipients, groups: found) {
                throw refusal
            }
            return .recipients(recipients, found)
        }
        let location: SubjectLocation
        do {
            location = try await cube.location(topicKey: submission.topicKey)
        } catch let error as DAOError where error.code == .topicNotFound {
            throw SendRefusal(.topicNotFound, error.message, field: .topicKey)
        }
        guard let subjectDistribution = location.subject.distribution, subjectDistribution == submission.distribution
        else {
            let expected = location.subject.distribution?.rawValue ?? "a valid distribution"
            throw SendRefusal(
                .distributionMismatch, "the field \"distribution\" must be \(expected), the subject's distribution")
        }
        if let refusal = submission.alertRefusal { throw refusal }
        guard identity.maySend(through: location.accessLists) else {
            throw SendRefusal(.accessDenied, "\(identity.name) may not send to this subject")
        }
        return .subject(location)
    }

    /// Stores a message to persons and groups (`RecipientPolicy` said `identity` may, `destination(of:as:)`) and
    /// gives it to the relay (from memory when `ticket(for:now:)` says so): its recipients are resolved to devices
    /// when it is sent, each device getting its own request.
    /// - Throws: `SendRefusal` (`.idempotencyKeyReused`); `DAOError` as `send`.
    private func send(
        _ submission: Submission, to recipients: Recipients, groups found: [Group], as identity: Identity,
        idempotencyKey: String?
    ) async throws -> Message {
        let now = self.now()
        let policy = try await approvalRules.current()
        let approval = try approvalDecision(
            submission, policy: policy,
            reasons: policy.reasons(
                recipients: recipients, groups: found, urgency: submission.highestUrgency), as: identity, now: now)
        let dueAt = max(submission.sendAt ?? now, now)
        let persons = Int64(recipients.persons.count) + found.reduce(0) { $0 + $1.memberCount }
        let ticket = ticket(for: .addressed(dueAt: dueAt, held: approval.holds, persons: persons), now: now)
        let plan = RelayPlan(
            dueAt: dueAt, sendAt: submission.sendAt.map { _ in dueAt },
            expiresAt: submission.expiry(dueAt: dueAt), ttlSeconds: submission.ttl,
            deadlineAt: dueAt + relayDeadline.milliseconds, direct: ticket, addressed: true,
            awaitsApproval: approval.holds)
        return try await handing(ticket) {
            try await store(
                MessageDraft(
                    title: submission.title, desc: submission.desc, message: submission.message, topicKey: "",
                    recipients: recipients, data: submission.data, distribution: submission.distribution,
                    urgency: submission.urgency, broadcast: submission.broadcast, sender: identity.name,
                    extra: approval.adding(to: submission.extra(relay: plan))),
                idempotencyKey: idempotencyKey, fingerprint: submission.fingerprint, sender: identity.name)
        }
    }

    /// One archived message as `viewer` sees it (`MessageVisibility`).
    /// - Throws: `DAOError` (`.messageNotFound`, also for a message `viewer` may not see yet; `.unavailable`).
    public func message(msiKey: ObjectID, for viewer: MessageViewer) async throws -> Message {
        let message = try await progress.resolved([messages.get(msiKey: msiKey)])[0]
        guard let view = MessageVisibility.view(message, for: viewer, now: now()) else {
            throw DAOError(.messageNotFound, "no message has the msi_key \(msiKey.hex)")
        }
        return view
    }

    /// A message whose detail `identity` sees (its sender, or an admin), for the portal's pages of sent messages.
    /// - Throws: `DAOError` (`.messageNotFound`, also for another sender's message; `.unavailable`).
    public func detailedMessage(msiKey: ObjectID, for identity: Identity) async throws -> Message {
        let message = try await message(msiKey: msiKey, for: .caller(identity))
        guard MessageVisibility.seesDetail(of: message, .caller(identity)) else {
            throw DAOError(.messageNotFound, "no message has the msi_key \(msiKey.hex)")
        }
        return message
    }

    /// A page of history, newest first, as `viewer` sees it: what it may not see yet is left out by the query.
    public func page(_ query: MessageQuery, for viewer: MessageViewer) async throws -> MessagePage {
        let now = self.now()
        var page = try await messages.page(MessageVisibility.restrict(query, for: viewer, now: now))
        // The cursor stays the query's: a row left out here (scheduled before `send_at` was recorded) moves nothing.
        page.messages = try await progress.resolved(page.messages).compactMap {
            MessageVisibility.view($0, for: viewer, now: now)
        }
        return page
    }

    /// A page of the messages whose detail `identity` sees (its own; an admin's: everyone's), newest first, for
    /// the portal's list of sent messages.
    public func detailedPage(_ query: MessageQuery, for identity: Identity) async throws -> MessagePage {
        var query = query
        query.sender = MessageVisibility.detailSender(for: identity)
        return try await page(query, for: .caller(identity))
    }
}

extension MessageService.Submission {
    /// When nothing more is sent or caught up with (Unix ms): the earlier of `expires_at` and the `ttl` from the send
    /// time; nil when neither is given.
    func expiry(dueAt: Int64) -> Int64? {
        switch (broadcast.expiresAt, ttl.map { dueAt + $0 * 1000 }) {
        case (let at?, let ttlEnd?): min(at, ttlEnd)
        case (let at, let ttlEnd): at ?? ttlEnd
        }
    }

    /// msi-hub's fields stored beside the legacy ones: the relay's plan, and `ack` when asked for.
    func extra(relay plan: RelayPlan, forcedAlert: Bool = false) -> BSONDocument {
        var extra: BSONDocument = ["relay": .document(plan.document(for: distribution))]
        if let ack { extra["ack"] = .document(ack.document) }
        if overridePreferences || forcedAlert { extra["override_preferences"] = true }
        return extra
    }
}
