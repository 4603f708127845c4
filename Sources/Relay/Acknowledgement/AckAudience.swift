import DAO
import FCM
import Logging
import Mongo

/// Fixes the audience of a message that asked for an acknowledgement when the relay has sent it (`MessageSender`),
/// so that "who has not answered" has a meaning: a message to persons and groups reaches its deliveries (written by
/// the fan-out as FCM answered), and so does a topic's sample (only the devices picked); a topic message reaches the devices that want its topic and that FCM still knows,
/// each given a delivery `via: "topic"` now. Then `audience_size` and the first check (`ack.next_at`, `within_s` on)
/// are noted on the message (`AcknowledgementDAO.fix`), once.
public struct AckAudience: MessageFinishing {
    let deliveries: DeliveryDAO
    let subscriptions: SubscriptionDAO
    let acknowledgements: AcknowledgementDAO
    let logger: Logger
    let now: UnixClock

    /// Devices read from the subscriptions at a time.
    static let pageSize = 1_000

    /// The stores of `database`, on the clock `now`.
    public init(database: MongoDatabase, logger: Logger, now: @escaping UnixClock) {
        self.deliveries = DeliveryDAO(database: database, now: now)
        self.subscriptions = SubscriptionDAO(database: database, now: now)
        self.acknowledgements = AcknowledgementDAO(database: database, now: now)
        self.logger = logger
        self.now = now
    }

    /// Fixes the audience of `message`, sent now, when it asked for an acknowledgement (else does nothing). A database
    /// failure is logged and tried twice more: the message is sent whatever comes of it, but without a fixed audience
    /// nobody is reminded.
    /// Fixes the audience of `message` once it is sent, if it asked for an acknowledgement.
    public func finished(_ message: Message, outcome: RelayOutcome) async {
        if outcome.status == .sent { await fix(message) }
    }

    func fix(_ message: Message) async {
        guard let request = AckRequest(document: message.document["ack"]?.documentValue) else { return }
        let sentAt = now()
        let fixed = await WriteRetry.run(
            "the audience of a message asking for acknowledgement could not be fixed", logger: logger,
            metadata: ["msi_key": "\(message.msiKey)"], attempts: 3
        ) {
            let size = try await audience(of: message)
            try await acknowledgements.fix(
                message: message, size: size, sentAt: sentAt, withinSeconds: request.withinSeconds)
        }
        if !fixed {
            logger.error(
                "a message asking for acknowledgement has no fixed audience: nobody is reminded",
                metadata: ["msi_key": "\(message.msiKey)"])
        }
    }

    /// The number of devices `message` reached; for a topic message, each one's delivery written first.
    private func audience(of message: Message) async throws -> Int64 {
        guard message.audience == .topic else { return try await deliveries.counts(of: message.id).total }
        var after: ObjectID?
        var size: Int64 = 0
        while true {
            let page = try await subscriptions.reachedPage(of: message.topicKey, after: after, limit: Self.pageSize)
            if page.isEmpty { break }
            try await deliveries.recordTopic(message: message.id, devices: page)
            size += Int64(page.count)
            guard page.count == Self.pageSize else { break }
            after = page.last?.device
        }
        return size
    }
}
