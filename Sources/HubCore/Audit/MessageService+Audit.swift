import DAO
import HubModel
import Mongo

extension MessageService {
    /// Records a newly stored message as `message.send` and answers it: its audience (topic key, or the persons and
    /// groups), title, distribution and urgency; never its texts beyond the title. A repeated idempotent request
    /// stores nothing new and is not recorded again.
    func recorded(_ message: Message) async -> Message {
        guard let audit else { return message }
        let actor =
            AuditActor.current.kind == .system ? AuditActor(kind: .user, name: message.sender) : AuditActor.current
        var after: [(key: String, value: BSONValue)] = [
            ("title", .string(message.title)),
            ("distribution", .string(message.distribution)),
            ("urgency", .string(message.urgency.rawValue)),
        ]
        if let recipients = message.recipients {
            after.append(("to", .document(recipients.document)))
        } else {
            after.append(("topic_key", .string(message.topicKey)))
        }
        for key in ["send_at", "approval", "override"] {
            if let value = message.document[key] { after.append((key, value)) }
        }
        await audit.record(
            actor: actor, action: "message.send", target: AuditTarget(kind: "message", id: message.msiKey.hex),
            change: AuditChange.created(BSONDocument(after)))
        return message
    }
}
