import DAO
import FCM
import Mongo

extension MessageSender {
    /// Sends the unsent `notices` of a held message (its corrections and withdrawal, `RelayComponent.isNotice`) in
    /// order, each as one request to the message's topic, or device by device to those its fan-out reached; records
    /// each component's answer, then the message sent (or failed, or pending for a retry). Nothing else of the message
    /// is sent again, and no webhook event nor acknowledgement follows: the message itself went out before.
    func sendNotices(_ notices: [RelayComponent], of message: Message, as relayMessage: RelayMessage,
                     state: RelayState, record: ((String) -> RelayUpdate) -> Void) async {
        let id = message.id
        func finish(_ outcome: RelayOutcome) {
            metrics.finished(outcome.status)
            held.finishing(id)
            record { outcome.update(lease: $0, now: now()) }
        }
        var permanent: FCMError?
        for component in notices {
            let notice: FCMNotice = component == .withdrawal ? .withdrawal : .correction
            let fcmComponent = FCMComponent(rawValue: component.rawValue)
            if FanOutResolver.FanOutAudience(of: message) != nil {
                guard let fanOut else {
                    return finish(RelayOutcome(id: id, status: .failed, lastError: "this relay sends no messages to persons"))
                }
                switch await fanOut.sendNotice(notice, component: fcmComponent, of: message, as: relayMessage) {
                case .finished:
                    record { RelayUpdate(id: id, lease: $0, component: component, result: .sent(name: "deliveries"), at: now()) }
                case .retry(let error):
                    return finish(retryOutcome(message, state: state, expiry: nil, error: error))
                case .expired, .stopped:
                    return record { .release(id: id, lease: $0) }
                case .lost:
                    return held.release(id)
                }
                continue
            }
            // A translated Alert's correction is one request per language it went in; a retry sends them all
            // again, which the phones show once (the same tag and collapse id replace the pop-up). A correction
            // leaves out the phones in their quiet hours (`QuietTopicHold.quietTopics(forCorrectionOf:)`).
            let quietNow = notice == .correction ? await quiet?.quietTopics(forCorrectionOf: relayMessage) ?? [] : []
            let requests = FCMMapping.noticeRequests(notice, for: relayMessage, topic: message.topicKey,
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
                    permanent = error
                    refused = true
                    break requests
                case .stopping:
                    return record { .release(id: id, lease: $0) }
                case .leaseLost:
                    return held.release(id)
                }
            }
            if !refused, let name = names.last {
                record { RelayUpdate(id: id, lease: $0, component: component, result: .sent(name: name), at: now()) }
            }
        }
        finish(RelayOutcome(id: id, status: permanent == nil ? .sent : .failed, lastError: permanent?.description))
    }
}
