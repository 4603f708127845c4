import DAO
import FCM
import Mongo

extension MessageSender {
    /// What sending a message's notices came to.
    enum NoticesResult {
        /// Each was sent (or found nobody to tell) and recorded, or refused for good (`refused`, recorded failed):
        /// the caller goes on with the message.
        case sent(refused: FCMError?)
        /// The message was edited again: the caller reads it again.
        case edited
        /// The attempt ended here (a retry, a stop, the lease lost): written as it should be.
        case ended
    }

    /// Sends the unsent `notices` of a held message (its corrections and withdrawal, `RelayComponent.isNotice`) in
    /// order, each as one request to the message's topic (when some of its components reached it: `reached`), or
    /// device by device to those its fan-out reached; records each component's answer. No webhook event nor
    /// acknowledgement follows a notice: the message itself went out before.
    func sendNotices(
        _ notices: [RelayComponent], of message: Message, as relayMessage: RelayMessage,
        state: RelayState, reached: Bool, watch: EditWatch,
        record: ((String) -> RelayUpdate) -> Void
    ) async -> NoticesResult {
        let id = message.id
        func finish(_ outcome: RelayOutcome) -> NoticesResult {
            var outcome = outcome
            outcome.edit = watch.seen
            metrics.finished(outcome.status)
            held.finishing(id)
            record { outcome.update(lease: $0, now: now()) }
            return .ended
        }
        var refusal: FCMError?
        for component in notices {
            if watch.isChanged { return .edited }
            let notice: FCMNotice = component == .withdrawal ? .withdrawal : .correction
            let fcmComponent = FCMComponent(rawValue: component.rawValue)
            if FanOutResolver.FanOutAudience(of: message) != nil {
                guard let fanOut else {
                    return finish(
                        RelayOutcome(id: id, status: .failed, lastError: "this relay sends no messages to persons"))
                }
                switch await fanOut.sendNotice(notice, component: fcmComponent, of: message, as: relayMessage) {
                case .finished:
                    record {
                        RelayUpdate(
                            id: id, lease: $0, component: component, result: .sent(name: "deliveries"), at: now())
                    }
                case .retry(let error):
                    return finish(retryOutcome(message, state: state, expiry: nil, error: error))
                case .expired, .stopped, .edited:
                    record { .release(id: id, lease: $0) }
                    return .ended
                case .lost:
                    held.release(id)
                    return .ended
                }
                continue
            }
            guard reached else {
                // None of its components went to the topic: there is nothing there to correct or withdraw.
                record { RelayUpdate(id: id, lease: $0, component: component, result: .skipped, at: now()) }
                continue
            }
            // A translated Alert's correction is one request per language it went in; a retry sends them all
            // again, which the phones show once (the same tag and collapse id replace the pop-up). A correction
            // leaves out the phones in their quiet hours (`QuietTopicHold.quietTopics(forCorrectionOf:)`).
            let quietNow = notice == .correction ? await quiet?.quietTopics(forCorrectionOf: relayMessage) ?? [] : []
            let requests = FCMMapping.noticeRequests(
                notice, for: relayMessage, topic: message.topicKey,
                component: fcmComponent, options: mapping,
                languages: state.languagesSentSeparately, excluding: quietNow)
            var names: [String] = []
            var refused = false
            requests: for request in requests {
                switch await sendComponent(request, as: component, of: id, record: record) {
                case .sent(let name):
                    names.append(name)
                case .retry(let error):
                    return finish(retryOutcome(message, state: state, expiry: nil, error: error))
                case .refused(let error):
                    // Recorded failed by `sendComponent`: the message is marked failed once the rest is done.
                    refusal = error
                    refused = true
                    break requests
                case .stopping:
                    record { .release(id: id, lease: $0) }
                    return .ended
                case .leaseLost:
                    held.release(id)
                    return .ended
                }
            }
            if !refused, let name = names.last {
                record { RelayUpdate(id: id, lease: $0, component: component, result: .sent(name: name), at: now()) }
            }
        }
        return .sent(refused: refusal)
    }
}
