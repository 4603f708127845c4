import DAO
import FCM
import Logging

/// The relay's per-device send lane: the one way a message reaches one device by its token, whoever sends it (the
/// fan-out, the escalation's re-sends, the quiet-hours held-back sends). It decides the device's requests
/// (`DeviceRequests`: language, sample, persons and groups, or a notice in place of the message), sends them through
/// the worker's gate and pacer (`PacedSends`: one rate and one gate for all of a process's per-device sends), and
/// marks a device FCM calls gone as unregistered (`GoneDevices`, behind the sends). What each sender records of the
/// answer (a delivery, a round's counts, a deferral) is the sender's.
public struct DeviceLane: Sendable {
    /// One device as the lane sends to it.
    struct Device: Sendable {
        /// Its FCM registration token.
        let registration: String
        /// Its locale, whose language the message is sent in when it has it.
        let locale: String?
        /// How the message reached it; nil for a device of a topic message with no delivery of its own.
        let delivery: Delivery?
        /// A notice about the message in place of the message (a correction, a withdrawal, an acknowledgement by
        /// its person elsewhere) and the component it is about.
        var notice: (FCMNotice, FCMComponent)? = nil
        /// For a read notice: the person's unread messages now.
        var unread: Int? = nil
    }

    /// The paced, gated sends.
    let sends: PacedSends
    /// How messages map to FCM requests.
    let mapping: FCMMappingOptions
    /// Where the devices FCM called gone are marked.
    let gone: GoneDevices

    /// The requests `device` gets for `message`, in order.
    func requests(for message: RelayMessage, to device: Device) -> [FCMRequest] {
        if let (notice, component) = device.notice {
            return [
                FCMMapping.noticeRequest(
                    notice, for: message, token: device.registration, component: component, options: mapping,
                    language: device.locale, unread: device.unread)
            ]
        }
        return DeviceRequests.requests(
            for: message, token: device.registration, delivery: device.delivery, options: mapping,
            language: device.locale)
    }

    /// Sends `device` its requests for `message` in order, the first under `ticket` when the caller was admitted
    /// already; stops at the first FCM did not take and returns its answer (`.sent` when it took them all). A device
    /// FCM called gone is queued to be marked unregistered before the answer returns (`drain` waits for the mark).
    func send(_ message: RelayMessage, to device: Device, with ticket: RelayGate.Ticket? = nil) async
        -> PacedSends.Outcome
    {
        var ticket = ticket
        for request in requests(for: message, to: device) {
            let outcome: PacedSends.Outcome
            if let admitted = ticket {
                ticket = nil
                outcome = await sends.send(request, with: admitted)
            } else {
                outcome = await sends.send(request)
            }
            switch outcome {
            case .sent:
                continue
            case .unregistered:
                gone.record(device.registration)
                return outcome
            case .retryLater, .paused, .failed, .cancelled:
                return outcome
            }
        }
        if let ticket { sends.abandon(ticket) }
        return .sent
    }

    /// Returns once every device called gone so far is marked (or given up on).
    func drain() async {
        await gone.drain()
    }
}

/// The devices FCM called gone (UNREGISTERED), marked unregistered in bulk behind the sends (`WriteBehind`): the one
/// place every per-device sender's gone devices are recorded, so none of them repeats the send to a dead token.
public final class GoneDevices: Sendable {
    private let writes: WriteBehind<String>

    /// Marks through `devices`, logging what it gives up on to `logger`.
    public init(devices: DeviceDAO, window: Duration = .milliseconds(100), logger: Logger) {
        writes = WriteBehind(window: window, batch: 500) { registrations in
            let marked = await WriteRetry.run("marking unregistered devices failed", logger: logger) {
                try await devices.markUnregistered(registrations: registrations)
            }
            if !marked {
                logger.error(
                    "devices FCM called gone could not be marked; they are sent to again and marked then",
                    metadata: ["devices": "\(registrations.count)"])
            }
        }
    }

    /// Queues `registration`'s device to be marked unregistered.
    func record(_ registration: String) {
        writes.record(registration)
    }

    /// Returns once every device queued so far is marked (or given up on).
    func drain() async {
        await writes.drain()
    }
}

extension DeviceLane {
    /// Sends a person's daily digest to one of their devices (`registration`, in `locale`): its one request,
    /// through the same gate and pacer as every per-device send; a device FCM calls gone is marked as any.
    func send(_ digest: FCMDigest, to registration: String, locale: String?) async -> PacedSends.Outcome {
        let request = FCMMapping.digestRequest(digest, token: registration, options: mapping, language: locale)
        let outcome = await sends.send(request)
        if case .unregistered = outcome { gone.record(registration) }
        return outcome
    }
}
