import HubModel

/// The server-owned FCM topic of a device's language, `lang-<primary language subtag>`: the locale rule is
/// `LocaleLanguage`'s (the one every layer uses), so registration, the rollout, the repair pass and per-device sends
/// agree.
///
/// A topic message with translations reaches each language through the condition
/// `'T' in topics && 'lang-hi' in topics`; a device without a (readable) locale is on no `lang-` topic and gets the
/// default language. The names cannot collide with a subject's topic key (three 24-hex ids joined by "-").
public enum LanguageTopic {
    /// What every language topic starts with.
    public static let prefix = LocaleLanguage.topicPrefix

    /// The lowercased primary language subtag of `locale`, or nil when it names none (`LocaleLanguage`).
    public static func language(ofLocale locale: String?) -> String? {
        LocaleLanguage.language(ofLocale: locale)
    }

    /// The topic of `locale`'s language (`lang-hi`), nil when it names none.
    public static func topic(forLocale locale: String?) -> String? {
        LocaleLanguage.topic(forLocale: locale)
    }

    /// The topic of a language code already checked (`^[a-z]{2,3}$`), nil for any other string.
    public static func topic(forLanguage code: String) -> String? {
        isLanguage(code) ? prefix + code : nil
    }

    /// Whether `topic` is a language topic (`lang-` and a language code).
    public static func isTopic(_ topic: String) -> Bool {
        topic.hasPrefix(prefix) && isLanguage(String(topic.dropFirst(prefix.count)))
    }

    /// Whether `code` is a lowercase language code, `^[a-z]{2,3}$`, that names a language.
    public static func isLanguage(_ code: String) -> Bool {
        LocaleLanguage.isLanguage(code)
    }
}
