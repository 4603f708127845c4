import DAO

/// What follows a message's relay once its outcome is final (`sent`, `failed`, `expired`), before the outcome is on
/// record: a crash in between makes it follow again, never not at all. The outbox tells every observer it was given,
/// in order, and knows nothing of what they do (the acknowledgement's audience, the webhook events); a withdrawn
/// message tells none.
public protocol MessageFinishing: Sendable {
    /// `message`'s relay ended with `outcome`.
    func finished(_ message: Message, outcome: RelayOutcome) async
}
