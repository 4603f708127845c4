/// The FCM topics the hub subscribes devices to on its own account (a device's language, `lang-hi`; its quiet
/// hours' window, `quiet-<12 hex>`; a subject its person holds for a digest or turned off, `held-<topic key>`), never
/// one of its subjects: left out wherever a device's subjects are listed or
/// counted. Their prefixes hold letters no topic key (hex ids joined by "-") has, so the two never collide.
public enum ServerOwnedTopic {
    /// The prefix of every quiet-hours window's topic (`DeviceService.quietTopic(of:)`).
    public static let quietPrefix = "quiet-"
    /// The prefix of the topics of subjects persons hold back (`held(_:)`).
    public static let heldPrefix = "held-"

    /// The topic of the devices whose person chose `digest` or `off` for the subject of `topicKey`: a topic message
    /// leaves them out of its notification, so they get its data alone, in the background.
    public static func held(_ topicKey: String) -> String { heldPrefix + topicKey }

    /// Whether the hub owns `topic` itself rather than a subject.
    public static func contains(_ topic: String) -> Bool {
        topic.hasPrefix(LanguageTopic.prefix) || topic.hasPrefix(quietPrefix) || topic.hasPrefix(heldPrefix)
    }
}
