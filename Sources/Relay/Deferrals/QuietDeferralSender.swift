import DAO
import FCM
import Foundation
import HubTime
import Logging
import Mongo

/// Sends the messages held back for devices in their quiet hours once each window has ended, for the hub's life,
/// beside the outbox worker whose sender, gate and send rate it shares (`PacedSends`).
///
/// Any number of replicas run one each: due deferrals are claimed under a lease in the database
/// (`QuietDeferralDAO.claim`), so nothing lives only in one process and a replica that dies leaves its claims due
/// again. A topic message's deferral sends its components to the device's token (`FCMMapping.requests(for:token:)`);
/// a message to persons and groups sends the device's request (`FCMMapping.deviceRequest`), and the answer is recorded
/// on its `deferred` delivery too. Each answer is recorded on the deferral: sent, failed, unregistered, or due again
/// after the pause FCM asked for. A message expired meanwhile is not sent (failed, `expired`).
public struct QuietDeferralSender: Sendable {
    /// How the sender claims and sends.
    public struct Configuration: Sendable {
        /// How long a claim holds a deferral: another replica sends it after this if this one dies.
        public var lease: Duration = .seconds(60)
        /// How often due deferrals are looked for.
        public var poll: Duration = .seconds(1)
        /// Deferrals claimed at a time.
        public var batch = 100

        public init() {}
    }

    let stores: QuietHoursStores
    /// The outbox worker's per-device lane.
    let lane: DeviceLane
    let configuration: Configuration
    let logger: Logger
    /// This process's name in the claims it takes.
    let owner: String

    /// How long a deferral FCM could not take waits when FCM named no time.
    static let retryDelayMS: Int64 = 30_000

    /// The sender for `stores` (and their clock), sending through `lane` (the outbox worker's); nil without one (a
    /// worker built without `FanOutStores` sends to no device).
    public init?(
        stores: QuietHoursStores, lane: DeviceLane?, configuration: Configuration = Configuration(),
        logger: Logger
    ) {
        guard let lane else { return nil }
        self.stores = stores
        self.lane = lane
        self.configuration = configuration
        self.logger = logger
        self.owner = "quiet-\(ProcessInfo.processInfo.hostName)-\(getpid())-\(ObjectID().hex.suffix(8))"
    }

    /// Claims and sends due deferrals until the task is cancelled: at once again after a full batch, after `poll`
    /// when none was due, after a growing wait while the database fails.
    public func run() async {
        await PollingLoop.run(
            logger: logger, failure: "held-back sends could not be read or recorded",
            idle: { try? await Task.sleep(for: configuration.poll) }
        ) {
            try await sendDue(limit: configuration.batch) == configuration.batch
        }
    }

    /// Claims up to `limit` deferrals due now and sends them one after another; returns how many it claimed.
    /// - Throws: `DAOError` when the database fails (what was sent is recorded).
    @discardableResult
    public func sendDue(limit: Int = 100) async throws -> Int {
        let due = try await stores.deferrals.claim(
            owner: owner, leaseMS: configuration.lease.milliseconds,
            limit: limit)
        var cache: [ObjectID: Message] = [:]
        for deferral in due {
            if Task.isCancelled { break }
            let message: Message
            if let known = cache[deferral.msiKey] {
                message = known
            } else {
                do {
                    message = try await stores.messages.get(msiKey: deferral.msiKey)
                } catch let error as DAOError where error.code == .messageNotFound {
                    try await record(deferral, .failed, code: "message_not_found")
                    continue
                }
                cache[deferral.msiKey] = message
            }
            try await send(deferral, of: message)
        }
        // The devices FCM called gone are marked before the next claim.
        await lane.drain()
        return due.count
    }

    /// Sends one deferral's requests in order and records the answer.
    private func send(_ deferral: QuietDeferral, of message: Message) async throws {
        guard let relayMessage = Self.relayMessage(message) else {
            return try await record(deferral, .failed, code: "not_relayable")
        }
        if relayMessage.isExpired(at: stores.now()) {
            return try await record(deferral, .failed, code: "expired")
        }
        // Withdrawn by its sender meanwhile: the held-back device never gets it (a correction it gets as corrected).
        if message.document["withdrawn"] != nil {
            return try await record(deferral, .failed, code: "withdrawn")
        }
        // A notice about the message (its person acknowledged it elsewhere) in place of the message; else the
        // message, in the device's language when the message has it.
        let device = DeviceLane.Device(
            registration: deferral.registration, locale: deferral.locale, delivery: deferral.delivery,
            notice: deferral.notice.map { notice in
                switch notice {
                case .acknowledged: (.acknowledged, .device)
                case .read: (.read, .device)
                }
            }, unread: deferral.unread)
        switch await lane.send(relayMessage, to: device) {
        case .sent:
            break
        case .cancelled:
            return  // the claim runs out: this or another replica sends it then
        case .unregistered(let error):
            // The device is the lane's to mark (`GoneDevices`).
            return try await record(deferral, .unregistered, code: FanOutSender.code(of: error))
        case .retryLater(let error), .paused(let error):
            let wait = error.retryAfter?.milliseconds ?? Self.retryDelayMS
            return try await stores.deferrals.retry(deferral.id, at: stores.now() + wait)
        case .failed(let error):
            logger.warning(
                "FCM refused a held-back send",
                metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
            return try await record(deferral, .failed, code: FanOutSender.code(of: error))
        }
        try await record(deferral, .sent)
    }

    /// Records the answer on the deferral, and on its delivery for a message to persons and groups. The delivery first: a stop in between leaves the deferral to be sent again, never a
    /// delivery `deferred` for good.
    private func record(_ deferral: QuietDeferral, _ state: QuietDeferral.State, code: String? = nil) async throws {
        if let delivery = deferral.delivery, let answered = Delivery.State(rawValue: state.rawValue) {
            try await stores.deliveries.record([DeliveryOutcome(delivery, state: answered, code: code)])
        }
        try await stores.deferrals.record(deferral.id, state, code: code)
    }

    /// The stored message as the relay sends it (`RelayMessage(stored:)`); nil without a distribution the mapping
    /// knows.
    static func relayMessage(_ message: Message) -> RelayMessage? {
        RelayMessage(stored: message)
    }
}
