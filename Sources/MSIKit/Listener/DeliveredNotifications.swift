#if canImport(UserNotifications)
    import UserNotifications
#endif

/// The notifications the system shows for the app, where the platform lets an app remove one.
enum DeliveredNotifications {
    /// Removes the delivered notification of the message `msiKey`, where the platform allows: on Apple platforms the
    /// notification's identifier is its `apns-collapse-id`, which the hub sets to the msi_key; elsewhere (Linux,
    /// and Android apps, whose notification the app removes by its tag) nothing.
    static func remove(msiKey: String) {
        #if canImport(UserNotifications) && !os(Linux)
            UNUserNotificationCenter.current().removeDeliveredNotifications(withIdentifiers: [msiKey])
        #endif
    }
}
