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
        /// The relay is sending the message right now; try again in a moment.
        case sending
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
}

/// Correcting and withdrawing a message (PUT and DELETE /message/:msiKey), its sender or an admin.
///
/// The phones that have a message are told through the message's own relay, as durable as the message was: a
/// correction or withdrawal adds one component to its `relay` (`correction-<n>`, `withdrawal`) and makes the message
/// pending again, due now, in the same update that stores the change. Any relay worker claims it as it claims any
/// message (one lease, the same retries and deadline) and sends that component alone (`MessageSender`): to the topic,
/// or to each device the fan-out reached. The texts of a message not yet sent are simply replaced (it goes out
/// corrected); a message not yet sent (scheduled, or awaiting approval) that is withdrawn is never sent.
extension MessageService {
    /// How many times one edit reads the message again when another write changed it in between.
    static let editAttempts = 5

    /// Corrects the message `msiKey` as `identity` asks, and relays the correction to the phones that have it.
    /// - Throws: `DAOError.messageNotFound`; `EditRefusal` (`.notYours`, `.withdrawn`, `.sending`); `SendRefusal`
    ///   as POST /message for the texts (`.fieldTooLong`, `.alertNeedsDesc`, `.invalidTranslations`).
    public func correct(msiKey: ObjectID, with correction: MessageCorrection, as identity: Identity) async throws -> Message {
        for _ in 0..<Self.editAttempts {
            let (stored, state, sent) = try await editable(msiKey, as: identity)
            // Being sent: the phones it reached already would not be told; once it is sent they are.
            if let state, !sent, state.status == .direct || state.status == .pending && state.attempts > 0 {
                throw EditRefusal(.sending, "the message is being sent right now: try again in a moment")
            }
            var broadcast = stored.broadcast
            if let value = correction.translations {
                var body: BSONDocument = ["translations": value]
                if let language = broadcast.language { body["lang"] = .string(language) }
                broadcast.translations = try Submission.broadcast(from: body, defaultLanguage: defaultLanguage,
                                                                  now: now()).translations
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
            let before = Self.texts(of: stored, translations: stored.document["translations"]?.documentValue)
            let after = MessageTexts(title: submission.title, desc: submission.desc, message: submission.message,
                                     translations: correction.translations == nil ? nil
                                         : broadcast.document["translations"]?.documentValue ?? [:])
            let count = stored.document["corrections"]?.arrayValue?.count ?? 0
            let now = self.now()
            let notice = sent ? RelayNotice(component: .correction(count + 1), dueAt: now,
                                            deadlineAt: now + relayDeadline.milliseconds,
                                            markSent: state?.direct == nil ? [] : state?.order ?? []) : nil
            if try await messages.correct(msiKey: msiKey, expected: state, corrections: count, at: now,
                                          by: identity.name, before: before, after: after, notice: notice) {
                if notice != nil { relay.notify() }
                await audit?.record(actor: AuditActor(identity), action: "message.correct",
                                    target: AuditTarget(kind: "message", id: msiKey.hex),
                                    change: AuditChange.edit(before: before.document, after: after.document))
                return try await messages.get(msiKey: msiKey)
            }
        }
        throw EditRefusal(.sending, "the message changed while it was being corrected: try again")
    }

    /// Withdraws the message `msiKey` as `identity` asks (`reason`, optional): a message not sent yet is cancelled
    /// (never sent), one sent is withdrawn from the phones that have it; either way catch-up and the active banners
    /// leave it out, and the history keeps a tombstone.
    /// - Throws: `DAOError.messageNotFound`; `EditRefusal` (`.notYours`, `.withdrawn`, `.sending`).
    public func withdraw(msiKey: ObjectID, reason: String?, as identity: Identity) async throws -> Message {
        for _ in 0..<Self.editAttempts {
            let (_, state, sent) = try await editable(msiKey, as: identity)
            let now = self.now()
            // Not sent yet: held for approval, or scheduled and never claimed.
            let cancel = state.map { $0.status == .awaitingApproval || ($0.status == .pending && $0.attempts == 0
                && $0.dueAt > now) } ?? false
            if let state, !cancel, !sent, state.status == .pending || state.status == .direct {
                throw EditRefusal(.sending, "the message is being sent right now: try again in a moment")
            }
            let notice = sent ? RelayNotice(component: .withdrawal, dueAt: now,
                                            deadlineAt: now + relayDeadline.milliseconds,
                                            markSent: state?.direct == nil ? [] : state?.order ?? []) : nil
            if try await messages.withdraw(msiKey: msiKey, expected: state, at: now, by: identity.name, reason: reason,
                                           cancel: cancel, notice: notice) {
                if notice != nil { relay.notify() }
                var after: BSONDocument = ["withdrawn": true, "cancelled": .bool(cancel)]
                if let reason { after["reason"] = .string(reason) }
                await audit?.record(actor: AuditActor(identity), action: "message.withdraw",
                                    target: AuditTarget(kind: "message", id: msiKey.hex),
                                    change: AuditChange.edit(before: ["state": .string(state?.status.rawValue ?? "sent")],
                                                             after: after))
                return try await messages.get(msiKey: msiKey)
            }
        }
        throw EditRefusal(.sending, "the message changed while it was being withdrawn: try again")
    }

    /// The message `msiKey` if `identity` may edit it, its relay state as stored, and whether phones may have it
    /// (some component went out: sent, failed after others, imported, or a direct message its process sent).
    private func editable(_ msiKey: ObjectID, as identity: Identity) async throws -> (Message, RelayState?, Bool) {
        let stored = try await messages.get(msiKey: msiKey)
        guard identity.role == .admin || identity.name == stored.sender else {
            throw EditRefusal(.notYours, "only the message's sender or an admin may change it")
        }
        guard stored.document["withdrawn"] == nil else {
            throw EditRefusal(.withdrawn, "the message \(msiKey.hex) is withdrawn")
        }
        let state = RelayState(message: stored.document)
        let sent: Bool
        switch state?.status {
        case .sent?, .failed?, .imported?: sent = true
        case .direct?: sent = try await progress.resolved([stored])[0].document[path: "relay.state"]?.stringValue == "sent"
        // Pending: not claimed yet (it goes out as corrected), or being sent or retried (the edit waits for it).
        default: sent = false
        }
        return (stored, state, sent)
    }

    /// The texts of `message` as a correction records them.
    static func texts(of message: Message, translations: BSONDocument?) -> MessageTexts {
        MessageTexts(title: message.title, desc: message.desc, message: message.message, translations: translations)
    }
}
