import DAO
import HubModel
import Mongo

extension MessageService {
    /// `person`'s post to room `room` held to the send rules of POST /message (sizes, `data` keys): an Alert to the
    /// room's other members (the author is left out, `to.except.persons`), titled `title` or the room's name, its
    /// text the pop-up's body (cut to the pop-up's length) and the message.
    /// - Throws: `SendRefusal` (`.fieldTooLong`, `.emptyField`, `.invalidData`).
    public func roomPost(
        title: String?, message text: String, data: [String: String], in room: Group, by person: String
    )
        throws -> Submission
    {
        let submission = Submission(
            title: title ?? room.name, desc: String(text.prefix(MessageField.desc.maxLength)), message: text,
            topicKey: "", recipients: Recipients(groups: [room.id], exceptPersons: [person]), data: data,
            distribution: .alert)
        if let refusal = submission.fieldRefusals.first ?? submission.alertRefusal { throw refusal }
        return submission
    }

    /// Stores `post` (made by `roomPost`) as `person`'s in room `room`, with `sender: {"person": id}` and `room`, and
    /// hands it to the relay: to this process's worker in memory when it can take it and the room has at most
    /// `directFanOutPersons` members. No approval rule holds it: the admin let the room's members post
    /// (`posting: members`), at the default urgency only.
    /// - Throws: `SendRefusal.relayBehind`; `DAOError`.
    public func post(_ post: Submission, in room: Group, by person: String) async throws -> Message {
        let now = self.now()
        let ticket = ticket(for: .addressed(dueAt: now, held: false, persons: room.memberCount), now: now)
        let plan = RelayPlan(
            dueAt: now, deadlineAt: now + relayDeadline.milliseconds, direct: ticket, addressed: true)
        var extra = post.extra(relay: plan)
        extra["room_name"] = .string(room.name)
        var draft = MessageDraft(
            title: post.title, desc: post.desc, message: post.message, topicKey: "", recipients: post.recipients,
            data: post.data, distribution: .alert, urgency: .default, sender: "", extra: extra)
        draft.roomPost = (person, room.id)
        return try await handing(ticket) {
            try await store(draft, idempotencyKey: nil, fingerprint: post.fingerprint, sender: "")
        }
    }

    /// A page of room `room`'s history, newest first: every message to the group (its members' posts and staff's
    /// messages to it), withdrawn ones as tombstones, as a member's device sees them.
    /// - Throws: `DAOError`.
    public func roomPage(_ room: String, after: MessageCursor?, limit: Int) async throws -> MessagePage {
        let now = self.now()
        var page = try await messages.groupPage(room, after: after, limit: limit, sentBy: now)
        page.messages = try await progress.resolved(page.messages).compactMap {
            MessageVisibility.view($0, for: .device, now: now)
        }
        return page
    }
}
