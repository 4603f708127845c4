import DAO

extension DeviceService {
    /// The server-owned topic of `device`'s language (`lang-hi` for "hi-IN", `LanguageTopic`): every registered
    /// device whose locale names a language is subscribed to it, so a topic message reaches each language through
    /// an FCM condition; nil for a device without one.
    public static func languageTopic(of device: Device) -> String? {
        LanguageTopic.topic(forLocale: device.locale)
    }

    /// Points the device's subscriptions at its language's topic and off any other `lang-` topic, through the
    /// reconciler like every subscription (never a call to FCM from here). The caller wakes the reconciler.
    /// - Throws: `DAOError`.
    func followLanguage(_ device: Device) async throws {
        try await subscriptions.setLanguage(Self.languageTopic(of: device), for: device)
    }
}
