/// The FCM topics the hub subscribes devices to on its own account (a device's language, `lang-hi`; its quiet
/// hours' window, `quiet-<12 hex>`), never one of its subjects: left out wherever a device's subjects are listed or
/// counted. Their prefixes hold letters no topic key (hex ids joined by "-") has, so the two never collide.
public enum ServerOwnedTopic {
    /// The prefix of every quiet-hours window's topic (`DeviceService.quietTopic(of:)`).
    public static let quietPrefix = "quiet-"

    /// Whether the hub owns `topic` itself rather than a subject.
    public static func contains(_ topic: String) -> Bool {
        topic.hasPrefix(LanguageTopic.prefix) || topic.hasPrefix(quietPrefix)
    }
}
