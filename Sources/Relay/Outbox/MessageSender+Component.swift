import DAO
import FCM
import Mongo

extension MessageSender {
    /// What became of one component's request, as the component loops of a topic message and of its notices act on
    /// it.
    enum ComponentResult {
        /// FCM took it, with this name; the caller records it (with what goes on record beside it).
        case sent(name: String)
        /// FCM asked to wait: recorded, and the pause it asked for shared; the components after it wait for the retry.
        case retry(FCMError)
        /// FCM refused it for good: recorded.
        case refused(FCMError)
        /// The worker is stopping while FCM asks to wait: nothing was sent.
        case stopping
        /// The message's lease is no longer safely held: nothing was sent, the ticket given back.
        case leaseLost
    }

    /// Sends `request`, component `component` of the held message `id`, on a ticket of the relay's gate (counting a
    /// probe), and records a failure FCM answered; a success is the caller's to record. The one step of every
    /// request the relay makes for a held message, so that the gate, the classifier, the metrics and the shared
    /// pauses see each the same way.
    func sendComponent(
        _ request: FCMRequest, as component: RelayComponent, of id: ObjectID,
        record: ((String) -> RelayUpdate) -> Void
    ) async -> ComponentResult {
        guard let ticket = await gate.admit() else { return .stopping }
        guard held.safeLease(of: id) != nil else {
            gate.abandon(ticket)
            return .leaseLost
        }
        if ticket.probe { metrics.probed() }
        let answer = await sender.answer(request)
        switch classifier.classify(answer, of: ticket) {
        case .sent(let name):
            metrics.sent(component)
            return .sent(name: name)
        case .retryAfter(let error, let pauseEnd):
            if let pauseEnd { pauses.share(until: pauseEnd, reason: error) }
            metrics.failed(component, retryable: true)
            record {
                RelayUpdate(
                    id: id, lease: $0, component: component,
                    result: .failed(error: error.description, permanent: false), at: now())
            }
            return .retry(error)
        case .failed(let error), .unregistered(let error):
            metrics.failed(component, retryable: false)
            record {
                RelayUpdate(
                    id: id, lease: $0, component: component,
                    result: .failed(error: error.description, permanent: true), at: now())
            }
            return .refused(error)
        }
    }
}
