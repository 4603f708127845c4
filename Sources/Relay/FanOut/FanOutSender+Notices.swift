import DAO
import FCM
import Mongo

extension FanOutSender {
    /// How many deliveries of a message one page of a notice reads.
    static let noticePage = 500

    /// Sends `notice` (a correction or withdrawal of `message`, mapped as `relayMessage`) to each device the message
    /// reached (its deliveries FCM took, or held back for quiet hours), one request each (the device's current
    /// registration and language), up to `inFlight` at once as the fan-out sends (a false alarm withdrawn from
    /// thousands of phones is withdrawn as fast as it went). A notice is idempotent on the phone (the same texts
    /// again, or a message removed twice), so a retry sends it to every device again rather than recording each one.
    func sendNotice(
        _ notice: FCMNotice, component: FCMComponent, of message: Message,
        as relayMessage: RelayMessage
    ) async -> Result {
        var after: String?
        var sent = 0
        var retry: FCMError?
        while true {
            guard held.safeLease(of: message.id) != nil else { return .lost }
            let page: [Delivery]
            let devices: [ObjectID: Device]
            do {
                page = try await deliveries.page(of: message.id, after: after, limit: Self.noticePage)
                let reached = page.filter { $0.state == .sent || $0.state == .deferred }.map(\.device)
                devices = reached.isEmpty ? [:] : try await resolver.stores.devices.devices(reached)
            } catch {
                return .retry(
                    FCMError(code: .other, message: "reading the deliveries failed: \(error)", isRetryable: true))
            }
            var stopped = false, paused: FCMError?
            func note(_ outcome: PacedSends.Outcome) {
                switch outcome {
                case .cancelled: stopped = true
                case .sent, .failed, .unregistered: sent += 1
                case .retryLater(let error): retry = error
                case .paused(let error): paused = error
                }
            }
            await withTaskGroup(of: PacedSends.Outcome.self) { group in
                var running = 0
                for device in devices.values.sorted(by: { $0.id < $1.id }) where device.state == .active {
                    if Task.isCancelled || stopped || paused != nil { break }
                    while running >= inFlight, let outcome = await group.next() {
                        running -= 1
                        note(outcome)
                    }
                    guard paused == nil, let ticket = await lane.sends.admit() else { break }
                    let target = DeviceLane.Device(
                        registration: device.registration, locale: device.locale, delivery: nil,
                        notice: (notice, component))
                    running += 1
                    group.addTask { [lane] in await lane.send(relayMessage, to: target, with: ticket) }
                }
                while let outcome = await group.next() { note(outcome) }
            }
            if let paused { return .retry(paused) }
            if stopped || Task.isCancelled { return .stopped }
            guard page.count == Self.noticePage, let last = page.last?.id else { break }
            after = last
        }
        if let retry { return .retry(retry) }
        return .finished(devices: sent)
    }
}
