import Crypto
import DAO
import HubTime
import Mongo

extension DeviceService {
    /// The quiet hours a device asks for (`quiet_hours`: `from`, `to` as "HH:MM", `tz` an IANA zone), the one
    /// reading of the field for every entry point.
    /// - Throws: `DeviceRefusal.invalidQuietHours` naming what is wrong.
    public static func quietHours(from: String, to: String, tz: String) throws -> QuietHours {
        switch QuietHours.parse(from: from, to: to, tz: tz) {
        case .success(let hours): return hours
        case .failure(let problem): throw DeviceRefusal(.invalidQuietHours, "quiet_hours: \(problem)")
        }
    }

    /// The server-owned FCM topic of a window, `quiet-` and the first 12 hex digits of the SHA-256 of its key
    /// ("from-to-tz"): every device with the window is subscribed to it, so a topic message can leave them out.
    public static func quietTopic(of quietHours: QuietHours) -> String {
        ServerOwnedTopic.quietPrefix + Hex.encode(SHA256.hash(data: Array(quietHours.key.utf8))).prefix(12)
    }

    /// Sets a device's quiet hours (nil clears them): stored on the device, counted in their window, and the device
    /// moved (through the reconciler) from its old window's topic to the new one's. Passive and active messages wait
    /// while the window holds (`QuietHoursPolicy` in the relay); time-sensitive and critical ones do not.
    /// - Throws: `DAOError`.
    public func setQuietHours(_ device: Device, _ quietHours: QuietHours?) async throws -> Device {
        let topic = quietHours.map(Self.quietTopic(of:))
        let (before, after) = try await devices.setQuietHours(device.id, quietHours, topic: topic)
        guard before.quietTopic != topic else { return after }
        // The new window is counted before the old one is left: a window in use never reads as empty.
        if let quietHours, let topic {
            try await quietWindows.add(quietHours, topic: topic)
            try await subscriptions.set(want: true, topics: [topic], for: after)
        }
        if let old = before.quietTopic {
            try await subscriptions.set(want: false, topics: [old], for: after)
            try await quietWindows.remove(topic: old)
        }
        reconcilerSignal.notify()
        return after
    }
}
