import DAO
import HubModel
import Logging
import Mongo

/// The relay's webhook events: `message.sent` when a message's relay is done (FCM took every part of it), and
/// `message.failed` when it ends otherwise (refused, out of retries, or its ttl ran out).
///
/// `WebhookEventDAO.emit` writes nothing while no webhook subscribes, so a topic send pays no write for them.
struct MessageEvents: Sendable {
    let events: WebhookEventDAO
    let logger: Logger
    let now: UnixClock

    /// Emits the event of `outcome` for `message`, if it is final; a failed write is logged and retried twice (the
    /// message's outcome is recorded whatever becomes of its event).
    func finished(_ message: Message, outcome: RelayOutcome) async {
        let name: WebhookEvent
        var payload = Self.payload(message)
        switch outcome.status {
        case .sent:
            name = .messageSent
            payload["sent_at"] = .int64(now())
        case .failed, .expired:
            name = .messageFailed
            payload["failed_at"] = .int64(now())
            payload["reason"] = .string(outcome.status.rawValue)
        default:
            return
        }
        let metadata: Logger.Metadata = ["event": "\(name.rawValue)", "msi_key": "\(message.msiKey.hex)"]
        await WriteRetry.run("a webhook event could not be stored", logger: logger, metadata: metadata, attempts: 3) {
            try await events.emit(name, payload: payload)
        }
    }

    /// What every message event says of the message: its key, title and audience (`topic_key` or `to`).
    static func payload(_ message: Message) -> BSONDocument {
        var payload: BSONDocument = ["msi_key": .string(message.msiKey.hex), "title": .string(message.title)]
        if let recipients = message.recipients {
            payload["to"] = .document(recipients.document)
        } else {
            payload["topic_key"] = .string(message.topicKey)
        }
        return payload
    }
}
