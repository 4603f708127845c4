import DAO
import FCM
import HubTime
import Logging
import Mongo

/// Sends the topic messages held back for devices in their quiet hours once each window has ended: the message's
/// components to the device's token (`FCMMapping.requests(for:token:options:)`), each answer recorded on the
/// deferral (sent, failed, unregistered, or due again after a pause FCM asked for). A message expired meanwhile is
/// not sent (recorded failed, `expired`).
public struct QuietDeferralSender: Sendable {
    let stores: QuietHoursStores
    let messages: MessageDAO
    let sender: any FCMSending
    let mapping: FCMMappingOptions
    let logger: Logger
    let now: UnixClock

    /// How long a deferral FCM could not take waits when FCM named no time.
    static let retryDelayMS: Int64 = 30_000

    public init(stores: QuietHoursStores, messages: MessageDAO, sender: any FCMSending, mapping: FCMMappingOptions,
                logger: Logger, now: @escaping UnixClock) {
        self.stores = stores
        self.messages = messages
        self.sender = sender
        self.mapping = mapping
        self.logger = logger
        self.now = now
    }

    /// Sends up to `limit` deferrals due now, one after another; returns how many it took.
    /// - Throws: `DAOError` when the database fails (what was sent is recorded).
    @discardableResult
    public func sendDue(limit: Int = 100) async throws -> Int {
        let due = try await stores.deferrals.due(limit: limit)
        var cache: [ObjectID: Message] = [:]
        for deferral in due {
            if Task.isCancelled { break }
            let message: Message
            if let known = cache[deferral.msiKey] {
                message = known
            } else {
                do {
                    message = try await messages.get(msiKey: deferral.msiKey)
                } catch let error as DAOError where error.code == .messageNotFound {
                    try await stores.deferrals.record(deferral.id, .failed, code: "message_not_found")
                    continue
                }
                cache[deferral.msiKey] = message
            }
            try await send(deferral, of: message)
        }
        return due.count
    }

    /// Sends one deferral's requests in order and records the answer.
    private func send(_ deferral: QuietDeferral, of message: Message) async throws {
        guard let relayMessage = Self.relayMessage(message) else {
            return try await stores.deferrals.record(deferral.id, .failed, code: "not_relayable")
        }
        if relayMessage.isExpired(at: now()) {
            return try await stores.deferrals.record(deferral.id, .failed, code: "expired")
        }
        for request in FCMMapping.requests(for: relayMessage, token: deferral.registration, options: mapping) {
            do {
                _ = try await sender.send(request)
            } catch let error as FCMError {
                if error.code == .unregistered {
                    return try await stores.deferrals.record(deferral.id, .unregistered, code: error.code.description)
                }
                if error.isRetryable {
                    let wait = error.retryAfter?.milliseconds ?? Self.retryDelayMS
                    return try await stores.deferrals.retry(deferral.id, at: now() + wait)
                }
                logger.warning("FCM refused a held-back send",
                               metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
                return try await stores.deferrals.record(deferral.id, .failed, code: error.code.description)
            }
        }
        try await stores.deferrals.record(deferral.id, .sent)
    }

    /// The stored topic message as the relay sends it; nil without a distribution the mapping knows.
    static func relayMessage(_ message: Message) -> RelayMessage? {
        guard let distribution = RelayMessage.Distribution(rawValue: message.distribution) else { return nil }
        let state = RelayState(message: message.document)
        return RelayMessage(
            msiKey: message.msiKey.hex, topicKey: message.topicKey, distribution: distribution, title: message.title,
            desc: message.desc, message: message.message, timestamp: message.timestamp,
            ttlSeconds: state?.ttlSeconds, expiresAt: state?.expiresAt, data: message.data,
            urgency: RelayMessage.Urgency(rawValue: message.urgency.rawValue) ?? .active)
    }
}
