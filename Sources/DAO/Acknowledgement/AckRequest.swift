import Mongo

/// What a sender asked of a message's recipients (`ack` on a message): an acknowledgement, perhaps one of
/// `responses`, within `withinSeconds`; the devices silent after that get the message again by token, up to `resend`
/// times, then the hub emits `message.unacknowledged`.
public struct AckRequest: Sendable, Equatable {
    /// The answers the app offers; empty: a plain acknowledgement (any short text, or none).
    public var responses: [String]
    /// How long a device has to acknowledge before the next re-send (and between re-sends).
    public var withinSeconds: Int64
    /// How many times a silent device gets the message again.
    public var resend: Int64
    /// Whether a person may change their answer (an invitation): the latest counts, and each change is a
    /// `message.acknowledged` event with the previous answer.
    public var changeable: Bool

    public init(responses: [String] = [], withinSeconds: Int64, resend: Int64, changeable: Bool = false) {
        self.responses = responses
        self.withinSeconds = withinSeconds
        self.resend = resend
        self.changeable = changeable
    }

    /// Reads a message's stored `ack`; nil when it has none (or not one of these).
    public init?(document: BSONDocument?) {
        guard let document, let within = document["within_s"]?.int64Value else { return nil }
        self.responses = document.strings("responses")
        self.withinSeconds = within
        self.resend = document["resend"]?.int64Value ?? 0
        self.changeable = document["changeable"]?.boolValue ?? false
    }

    /// The fields stored as `ack` when the message is sent (the relay adds its progress beside them).
    public var document: BSONDocument {
        var document: BSONDocument = [:]
        if !responses.isEmpty { document["responses"] = responses.bson }
        document["within_s"] = .int64(withinSeconds)
        document["resend"] = .int64(resend)
        if changeable { document["changeable"] = true }
        return document
    }
}

/// Where a message's escalation stands (`ack` beside the request): rounds of re-sends finished, when the next step is
/// due, and how far the round under way got.
public struct AckProgress: Sendable {
    /// The message as claimed (its `_id`, `msi_key`, texts for the re-sends).
    public var message: Message
    public var request: AckRequest
    /// Rounds of re-sends finished.
    public var round: Int64
    /// When the next round (or the end) is due (Unix ms); nil once finished or before the audience was fixed.
    public var nextAt: Int64?
    /// In the round under way (`round + 1`), the last delivery `_id` whose device was dealt with; nil: none yet.
    public var cursor: String?

    /// Reads a claimed message; nil when it has no `ack`.
    public init?(message: Message) {
        guard let ack = message.document["ack"]?.documentValue, let request = AckRequest(document: ack) else {
            return nil
        }
        self.message = message
        self.request = request
        self.round = ack["round"]?.int64Value ?? 0
        self.nextAt = ack["next_at"]?.int64Value
        self.cursor = ack["cursor"]?.stringValue
    }
}

/// What one round of re-sends came to, counted per device (`ack.rounds`).
public struct AckRoundCounts: Sendable, Equatable {
    /// Devices that had not acknowledged when the round reached them.
    public var silent: Int64 = 0
    /// Devices FCM took the re-send for.
    public var sent: Int64 = 0
    /// Devices FCM refused (for good, or asked to wait: the next round tries again).
    public var failed: Int64 = 0
    /// Devices FCM called gone now.
    public var unregistered: Int64 = 0
    /// Devices not sent to: unregistered before, or deleted.
    public var skipped: Int64 = 0

    public init() {}

    /// The counts as `$inc` paths under `prefix`.
    func increments(_ prefix: String) -> [(key: String, value: BSONValue)] {
        [
            ("\(prefix).silent", .int64(silent)), ("\(prefix).sent", .int64(sent)),
            ("\(prefix).failed", .int64(failed)),
            ("\(prefix).unregistered", .int64(unregistered)), ("\(prefix).skipped", .int64(skipped)),
        ]
    }
}
