import DAO
import HTTPTypes
import Mongo
import Relay

/// Sending a message: what POST /message and the portal's send form share once each has read its request.
///
/// Finds the subject, checks the distribution, the Alert's body and the sender's access, stores the message
/// with its relay plan and wakes the relay.
struct MessageSending: Sendable {
    let services: HubServices

    /// A message as a client asked for it, its fields already read and within their length limits.
    struct Submission: Sendable {
        var title: String
        var desc: String
        var message: String
        var topicKey: String
        var distribution: Distribution
        /// Seconds FCM keeps it for phones that are offline; nil: FCM's default.
        var ttl: Int64? = nil
        /// When to send it (Unix ms); nil: now.
        var sendAt: Int64? = nil
    }

    /// Stores `submission` as sent by `identity` and hands it to the relay.
    /// - Throws: `HubError` 404 (`topic_not_found`), 422 (`distribution_mismatch`, `empty_field` for an Alert's
    ///   `desc`), 403 (`subject_access_denied`); `DAOError` when the database fails.
    func send(_ submission: Submission, as identity: Identity) async throws -> Message {
        let location = try await services.cube.location(topicKey: submission.topicKey, subjects: services.subjects)
        guard let subjectDistribution = location.subject.distribution, subjectDistribution == submission.distribution else {
            let expected = location.subject.distribution?.rawValue ?? "a valid distribution"
            throw HubError.invalid("distribution_mismatch",
                                   "the field \"distribution\" must be \(expected), the subject's distribution")
        }
        if submission.distribution == .alert, submission.desc.isEmpty {
            throw HubError.invalid("empty_field", "the field \"desc\" must not be empty for an Alert: it is the push notification's body")
        }
        guard identity.maySend(through: location.accessLists) else {
            throw HubError(.forbidden, "subject_access_denied", "\(identity.name) may not send to this subject")
        }
        let now = UnixTime.nowMilliseconds()
        let dueAt = max(submission.sendAt ?? now, now)
        let plan = RelayPlan(dueAt: dueAt, expiresAt: submission.ttl.map { dueAt + $0 * 1000 }, ttlSeconds: submission.ttl,
                             deadlineAt: dueAt + services.relayDeadlineMS)
        let message = try await services.messages.add(MessageDraft(
            title: submission.title, desc: submission.desc, message: submission.message, topicKey: submission.topicKey,
            distribution: submission.distribution, sender: identity.name,
            extra: ["relay": .document(plan.document(for: submission.distribution))]))
        services.outboxSignal.notify()
        return message
    }
}
