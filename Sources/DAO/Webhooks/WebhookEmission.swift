import HubModel
import Mongo

/// A webhook event as the hub emits it: which event, and its `data`. Every event's payload is built here, whichever
/// layer emits it (the relay for `message.sent` and `message.failed`, receipts for `message.acknowledged`, the
/// escalation for `message.unacknowledged`), and stored through the one failure policy of
/// `WebhookEventDAO.emit(_:logger:)`.
public struct WebhookEmission: Sendable {
    public let event: WebhookEvent
    /// The event's `data` (snake_case fields).
    public let payload: BSONDocument
    /// The message the event is about, for the logs.
    public let msiKey: ObjectID

    /// A message's relay is done: FCM took every part of it at `time` (Unix ms).
    public static func sent(_ message: Message, at time: Int64) -> Self {
        var payload = audience(message)
        payload["sent_at"] = .int64(time)
        return Self(event: .messageSent, payload: payload, msiKey: message.msiKey)
    }

    /// A message's relay ended otherwise at `time`: `reason` is its relay status (`failed`, `expired`).
    public static func failed(_ message: Message, reason: String, at time: Int64) -> Self {
        var payload = audience(message)
        payload["failed_at"] = .int64(time)
        payload["reason"] = .string(reason)
        return Self(event: .messageFailed, payload: payload, msiKey: message.msiKey)
    }

    /// A device acknowledged `message` with `receipt` (`device`, `person`?, `response`?, `at`).
    /// A changed answer (`changedFrom`: the person's previous answer, `.some(nil)` when they gave none) carries
    /// `changed: true` and `previous_response`.
    public static func acknowledged(_ message: Message, by receipt: Receipt, changedFrom: String?? = nil) -> Self {
        var payload = subject(message)
        payload["device"] = .string(receipt.device.hex)
        if let person = receipt.person { payload["person"] = .string(person) }
        if let response = receipt.response { payload["response"] = .string(response) }
        if let previous = changedFrom {
            payload["changed"] = true
            payload["previous_response"] = previous.map(BSONValue.string) ?? .null
        }
        payload["at"] = .int64(receipt.at)
        return Self(event: .messageAcknowledged, payload: payload, msiKey: message.msiKey)
    }

    /// `message`'s escalation ended with `devices` that never acknowledged it, `persons` those of them bound to a
    /// person (each with their silent devices, in the order first met).
    public static func unacknowledged(
        _ message: Message, devices: [ObjectID], persons: [(person: String, devices: [ObjectID])]
    ) -> Self {
        var payload = subject(message)
        payload["devices"] = .array(devices.map { .string($0.hex) })
        payload["persons"] = .array(persons.map { .string($0.person) })
        payload["unacknowledged"] = .array(
            persons.map { ["person": .string($0.person), "devices": .array($0.devices.map { .string($0.hex) })] })
        return Self(event: .messageUnacknowledged, payload: payload, msiKey: message.msiKey)
    }

    /// What every event says of its message: its key and title.
    static func subject(_ message: Message) -> BSONDocument {
        ["msi_key": .string(message.msiKey.hex), "title": .string(message.title)]
    }

    /// The subject and the audience (`topic_key`, or `to` for persons and groups).
    static func audience(_ message: Message) -> BSONDocument {
        var payload = subject(message)
        if let recipients = message.recipients {
            payload["to"] = .document(recipients.document)
        } else {
            payload["topic_key"] = .string(message.topicKey)
        }
        return payload
    }
}
