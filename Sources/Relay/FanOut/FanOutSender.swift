import DAO
import FCM
import Logging
import Mongo
import Synchronization

/// Sends a held message to persons and groups: one FCM request per device (`message.token`), instead of the topic
/// components. Resolves the message (`FanOutResolver`) and sends its devices as they are found (on a later attempt,
/// those not answered yet); with up to
/// `inFlight` requests at once, each paced by `FCM_SEND_RATE` (`SendPacer`) and let through the worker's gate (a 429,
/// 503 or time-out pauses every send of the project, and the other replicas through `SharedPause`). Answers are
/// recorded in bulk (`DeliveryRecorder`); `UNREGISTERED` marks the delivery and its device.
///
/// It stops sending when the lease is in doubt, the task is cancelled, the ttl runs out, FCM asks to wait or the
/// message was corrected or withdrawn (`EditWatch`: no request is started after that is known, not even one whose
/// permit was taken), lets the requests in flight finish and their answers be written, and says what the message
/// comes to (`Result`).
struct FanOutSender: Sendable {
    /// What one attempt at a message's fan-out came to, for `MessageSender` to record.
    enum Result: Sendable {
        /// Every delivery has an answer (per-device refusals stay per device).
        case finished(devices: Int)
        /// FCM asked to wait, or some devices are to be tried again: pending until a retry.
        case retry(FCMError)
        /// Stopped (the worker stops): the rest is for any worker.
        case stopped
        /// The lease is in doubt: nothing more is sent or written for the message.
        case lost
        /// The ttl ran out before every device was sent to.
        case expired
        /// The message was corrected or withdrawn: the sender reads it again and goes on as it now is.
        case edited
    }

    /// Why a fan-out stopped before its last delivery.
    private enum Stop: Sendable {
        case cancelled, lease, expired, edited
        case wait(FCMError)
    }

    /// The state the fan-out's requests share with its loop.
    private final class Progress: Sendable {
        private struct State {
            var stop: Stop?
            var leftPending: FCMError?
            var devices: Int?
        }
        private let state = Mutex(State())

        var stop: Stop? { state.withLock { $0.stop } }
        var leftPending: FCMError? { state.withLock { $0.leftPending } }
        /// How many devices the resolution found, once it ended.
        var devices: Int? {
            get { state.withLock { $0.devices } }
            set { state.withLock { $0.devices = newValue } }
        }

        /// Stops the fan-out, unless it stopped already for another reason.
        func stop(_ reason: Stop) {
            state.withLock { if $0.stop == nil { $0.stop = reason } }
        }

        /// A device's send is to be tried again later.
        func leavePending(_ error: FCMError) {
            state.withLock { $0.leftPending = error }
        }
    }

    /// The worker's per-device sends: `FCM_SEND_RATE` (every replica together), its gate (back-pressure shared with
    /// its topic sends), the transport, FCM's answers sorted and the pauses it asks for shared.
    let lane: DeviceLane
    /// The worker's messages and their leases: nothing is sent on a lease in doubt.
    let held: HeldMessages
    let resolver: FanOutResolver
    /// Where the resolution's progress is noted on the message.
    let deliveries: DeliveryDAO
    /// Writes the answers in bulk.
    let recorder: DeliveryRecorder
    /// Requests of one message in flight at most.
    let inFlight: Int
    let logger: Logger
    let now: UnixClock

    /// The lease was lost while the message was being resolved.
    private struct LeaseLost: Error {}

    /// Sends `message` (to `audience`, mapped as `relayMessage`) to its devices not yet answered, until `watch` says
    /// it was edited. `fresh`: the message is on the first attempt of the process that stored it, sent from memory
    /// (`.direct`): nothing of it was sent before, and its insert noted already that sends begin.
    func send(
        _ message: Message, audience: FanOutResolver.FanOutAudience, as relayMessage: RelayMessage,
        watch: EditWatch? = nil, fresh: Bool = false
    ) async -> Result {
        let id = message.id
        guard let lease = held.safeLease(of: id) else { return .lost }
        let progress = Progress()
        var sent = 0
        var failedRead: (any Error)?
        // The deliveries to send come a batch at a time: as the resolution stores them (sending starts with the first
        // batch), or, once the message is resolved, as pages of the pending ones are read.
        let (pages, producer) = pages(
            of: message, audience: audience, lease: lease.owner, fresh: fresh, progress: progress)
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            var iterator = pages.makeAsyncIterator()
            var page: [Delivery] = []
            var index = 0
            while progress.stop == nil {
                if index == page.count {
                    do {
                        guard let next = try await iterator.next() else { break }
                        (page, index) = (next, 0)
                    } catch is LeaseLost {
                        progress.stop(.lease)
                    } catch {
                        failedRead = error
                        break
                    }
                    continue
                }
                while running >= inFlight, await group.next() != nil { running -= 1 }
                if Task.isCancelled { progress.stop(.cancelled); break }
                if relayMessage.isExpired(at: now()) { progress.stop(.expired); break }
                guard let ticket = await lane.sends.admit() else { progress.stop(.cancelled); break }
                // Asked again once the permit is in hand: the wait for it may have seen the edit.
                if watch?.isChanged == true {
                    lane.sends.abandon(ticket)
                    progress.stop(.edited)
                    break
                }
                guard progress.stop == nil, held.safeLease(of: id) != nil else {
                    lane.sends.abandon(ticket)
                    progress.stop(.lease)
                    break
                }
                let delivery = page[index]
                index += 1
                running += 1
                sent += 1
                group.addTask { await self.call(delivery, ticket: ticket, relayMessage, progress: progress) }
            }
            producer.cancel()
            // The requests in flight finish (their answers are recorded) whatever stopped the loop.
            await group.waitForAll()
        }
        await recorder.drain()
        await lane.drain()
        let result: Result
        if let failedRead {
            result = .retry(
                FCMError(
                    code: .other, message: "reading the deliveries failed: \(failedRead)",
                    isRetryable: true))
        } else {
            switch progress.stop {
            case .cancelled: result = .stopped
            case .lease: result = .lost
            case .expired: result = .expired
            case .edited: result = .edited
            case .wait(let error): result = .retry(error)
            case nil: result = progress.leftPending.map(Result.retry) ?? .finished(devices: sent)
            }
        }
        // A fresh message's count of devices was not written at its resolution: every device has its delivery
        // record when it finished, which the report counts. Otherwise the count is noted now, for the report's
        // devices not answered yet.
        if fresh, let devices = progress.devices {
            switch result {
            case .finished, .lost: break
            case .retry, .stopped, .expired, .edited:
                do {
                    _ = try await deliveries.markResolved(message: id, lease: lease.owner, count: devices)
                } catch {
                    // The report then counts the delivery records alone until a later attempt writes the count.
                    logger.warning(
                        "a fan-out's count of devices could not be written",
                        metadata: ["message": "\(id)", "error": "\(error)"])
                }
            }
        }
        return result
    }

    /// The deliveries of `message` to send, a batch at a time as the resolution finds them (sending starts with the
    /// first batch), and the task that produces them. The first attempt notes on the message, under `lease`, that
    /// sends begin (a `fresh` one's insert noted it); a later one leaves out the devices answered already. The stream
    /// ends in `LeaseLost` when the lease no longer holds the message.
    private func pages(
        of message: Message, audience: FanOutResolver.FanOutAudience, lease: String, fresh: Bool, progress: Progress
    ) -> (AsyncThrowingStream<[Delivery], any Error>, Task<Void, Never>) {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [Delivery].self)
        let producer = Task { [resolver, deliveries, logger] in
            do {
                let resumed = !fresh && FanOutResolver.isStarted(message)
                if !resumed && !fresh {
                    guard try await deliveries.markResolving(message: message.id, lease: lease) else {
                        throw LeaseLost()
                    }
                }
                guard
                    let count = try await resolver.resolve(
                        message, audience: audience, lease: lease,
                        leavingOutAnswered: resumed, noting: !fresh,
                        found: { continuation.yield($0) })
                else { throw LeaseLost() }
                progress.devices = count
                logger.debug(
                    "message resolved to devices",
                    metadata: ["msi_key": "\(message.msiKey)", "devices": "\(count)"])
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in producer.cancel() }
        return (stream, producer)
    }

    /// Sends one device its request and queues the answer's record.
    private func call(
        _ delivery: Delivery, ticket: RelayGate.Ticket, _ message: RelayMessage,
        progress: Progress
    ) async {
        let device = DeviceLane.Device(
            registration: delivery.registration, locale: delivery.locale, delivery: delivery)
        switch await lane.send(message, to: device, with: ticket) {
        case .cancelled:
            // The worker stops: a request cut short says nothing of FCM. Its device has no answer, for the next
            // worker to send.
            return
        case .sent:
            recorder.record(DeliveryOutcome(delivery, state: .sent))
        case .retryLater(let error):
            recorder.record(DeliveryOutcome(delivery, state: .pending, code: Self.code(of: error)))
            progress.leavePending(error)
        case .paused(let error):
            // FCM asked the project to wait: no more sends of this message in this attempt.
            recorder.record(DeliveryOutcome(delivery, state: .pending, code: Self.code(of: error)))
            progress.stop(.wait(error))
        case .failed(let error):
            recorder.record(DeliveryOutcome(delivery, state: .failed, code: Self.code(of: error)))
        case .unregistered(let error):
            recorder.record(DeliveryOutcome(delivery, state: .unregistered, code: Self.code(of: error)))
        }
    }

    /// FCM's code for a refusal as recorded on a delivery: its `errorCode` detail, else its status, else ours.
    static func code(of error: FCMError) -> String {
        error.fcmErrorCode ?? error.status ?? error.code.description
    }
}
