import DAO
import Logging
import Mongo

/// The relay's webhook events: `message.sent` when a message's relay is done (FCM took every part of it), and
/// `message.failed` when it ends otherwise (refused, out of retries, or its ttl ran out).
///
/// `WebhookEventDAO.emit` writes nothing while no webhook subscribes, so a topic send pays no write for them.
public struct MessageEvents: MessageFinishing {
    let events: WebhookEventDAO
    let logger: Logger
    let now: UnixClock

    public init(events: WebhookEventDAO, logger: Logger, now: @escaping UnixClock) {
        self.events = events
        self.logger = logger
        self.now = now
    }

    /// Emits the event of `outcome` for `message`, if it is final (`WebhookEventDAO.emit(_:logger:)`: the message's
    /// outcome is recorded whatever becomes of its event).
    public func finished(_ message: Message, outcome: RelayOutcome) async {
        switch outcome.status {
        case .sent:
            await events.emit(.sent(message, at: now()), logger: logger)
        case .failed, .expired:
            await events.emit(.failed(message, reason: outcome.status.rawValue, at: now()), logger: logger)
        default:
            return
        }
    }
}
