import DAO
import HubTime
import Mongo

/// Sending a message that asked for an acknowledgement again, now, to the devices that have not answered: its
/// sender (or an admin) brings the escalation's next round forward. The escalation worker takes the round as it takes
/// any due one (by token, one urgency level up, those who acknowledged left out), and the rounds stay bounded by the
/// message's `resend`: a round brought forward is one of them, not one more.
public struct AckResendService: Sendable {
    let messages: MessageService
    let acknowledgements: AcknowledgementDAO
    let now: UnixClock

    /// Where a message's escalation stands, as its sender is shown it.
    public enum Step: Sendable, Equatable {
        /// The message asked for no acknowledgement.
        case notAsked
        /// Not sent yet: the audience that "not answered" counts from is not fixed.
        case notSent
        /// `made` of `resend` rounds were made; the next is due at `nextAt` (Unix ms) and may be brought forward.
        case waiting(made: Int64, resend: Int64, nextAt: Int64)
        /// A round, or the end, is being taken by a replica now.
        case underWay(made: Int64, resend: Int64)
        /// Every re-send was made; those not answered are reported at `at` (Unix ms).
        case allResent(resend: Int64, at: Int64)
        /// The escalation ended; `unacknowledged` devices never answered.
        case finished(unacknowledged: Int64)

        /// Whether a round may be brought forward now.
        public var mayResend: Bool {
            if case .waiting = self { return true }
            return false
        }
    }

    /// Where `message`'s escalation stands at `now` (Unix ms).
    public static func step(of message: Message, now: Int64) -> Step {
        guard let progress = AckProgress(message: message) else { return .notAsked }
        let resend = progress.request.resend
        if progress.finishedAt != nil { return .finished(unacknowledged: progress.unacknowledged ?? 0) }
        guard let nextAt = progress.nextAt else { return .notSent }
        if let until = progress.leaseUntil, until >= now { return .underWay(made: progress.round, resend: resend) }
        if progress.round >= resend { return .allResent(resend: resend, at: nextAt) }
        return .waiting(made: progress.round, resend: resend, nextAt: nextAt)
    }

    /// Brings message `msiKey`'s next round of re-sends forward to now, for `identity` (its sender or an admin);
    /// returns the round now due (1-based).
    /// - Throws: `DAOError.messageNotFound` (also for a message `identity` may not see the detail of);
    ///   `AckResendRefusal` when the escalation is not waiting for a round (`step(of:now:)`): `.notAsked`,
    ///   `.notSent`, `.underWay`, `.allResent`, `.finished`; `DAOError` when the database fails.
    public func resendNow(msiKey: ObjectID, for identity: Identity) async throws -> Int64 {
        let message = try await messages.detailedMessage(msiKey: msiKey, for: identity)
        let step = Self.step(of: message, now: now())
        guard case .waiting(let made, let resend, _) = step else { throw Self.refusal(step) }
        if try await acknowledgements.resendNow(message: message.id, resend: resend) { return made + 1 }
        // It moved on between the read and the update: say where it stands now.
        let current = try await messages.detailedMessage(msiKey: msiKey, for: identity)
        throw Self.refusal(Self.step(of: current, now: now()))
    }

    /// The refusal of a round brought forward at `step`.
    static func refusal(_ step: Step) -> AckResendRefusal {
        switch step {
        case .notAsked:
            AckResendRefusal(.notAsked, "this message did not ask for an acknowledgement")
        case .notSent:
            AckResendRefusal(.notSent, "this message is not sent yet: nobody can have failed to answer it")
        case .underWay:
            AckResendRefusal(.underWay, "a round of re-sends is under way now")
        case .allResent(let resend, _):
            AckResendRefusal(.allResent, "every re-send this message asked for (\(resend)) was made")
        case .finished, .waiting:
            AckResendRefusal(.finished, "the escalation of this message has ended")
        }
    }
}

/// Why a round of re-sends was not brought forward: a code each adapter maps once (the portal: 409).
public typealias AckResendRefusal = Refusal<AckResendRefusalCode>

/// The codes of an `AckResendRefusal`.
public struct AckResendRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String { case notAsked, notSent, underWay, allResent, finished }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// The message asked for no acknowledgement.
    public static let notAsked = AckResendRefusalCode(.notAsked)
    /// The message is not sent yet.
    public static let notSent = AckResendRefusalCode(.notSent)
    /// A replica is taking a round (or the end) now.
    public static let underWay = AckResendRefusalCode(.underWay)
    /// Every re-send the message asked for was made.
    public static let allResent = AckResendRefusalCode(.allResent)
    /// The escalation ended.
    public static let finished = AckResendRefusalCode(.finished)

    public var description: String { value.rawValue }
}

extension HubServices {
    /// Bringing a message's next round of re-sends forward (the portal's "Send again to those who have not
    /// answered").
    public var ackResends: AckResendService {
        AckResendService(
            messages: messages, acknowledgements: AcknowledgementDAO(database: database, now: now),
            now: now)
    }
}
