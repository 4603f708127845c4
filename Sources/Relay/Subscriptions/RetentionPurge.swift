import DAO
import FCM

/// Removes the devices unregistered for longer than the retention, and their subscriptions.
struct RetentionPurge: Sendable {
    let devices: DeviceDAO
    let subscriptions: SubscriptionDAO
    /// How long an unregistered device is kept.
    let retention: Duration
    let now: UnixClock

    /// Removes every device unregistered before the retention's start.
    /// - Throws: `DAOError`.
    func removeExpiredDevices() async throws {
        let cutoff = now() - retention.milliseconds
        for id in try await devices.unregistered(before: cutoff) {
            let device = try await devices.get(id)
            try await subscriptions.removeRegistration(device.registration)
            try await devices.delete(id)
        }
    }
}
