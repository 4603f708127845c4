/// The server-owned FCM topic of a device's language, `lang-<primary language subtag>`: the one place a locale
/// becomes a language and a topic, so registration, the rollout, the repair pass and per-device sends agree.
///
/// A topic message with translations reaches each language through the condition
/// `'T' in topics && 'lang-hi' in topics`; a device without a (readable) locale is on no `lang-` topic and gets the
/// default language. The names cannot collide with a subject's topic key (three 24-hex ids joined by "-").
public enum LanguageTopic {
    /// What every language topic starts with.
    public static let prefix = "lang-"

    /// Primary subtags that name no language (BCP 47: undetermined, multiple, uncoded, no linguistic content).
    static let notLanguages: Set<String> = ["und", "mul", "mis", "zxx"]

    /// The lowercased primary language subtag of `locale` ("hi-IN" → "hi", "zh-Hant-TW" → "zh", "pt_BR" → "pt"),
    /// or nil when it names none (absent, empty, not 2 or 3 ASCII letters, "und").
    public static func language(ofLocale locale: String?) -> String? {
        guard let locale else { return nil }
        let primary = locale.utf8.prefix { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: "_") && $0 != UInt8(ascii: ".")
            && $0 != UInt8(ascii: "@") }
        guard let code = String(primary)?.lowercased(), isLanguage(code) else { return nil }
        return code
    }

    /// The topic of `locale`'s language (`lang-hi`), nil when it names none.
    public static func topic(forLocale locale: String?) -> String? {
        language(ofLocale: locale).map { prefix + $0 }
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
        (2...3).contains(code.utf8.count) && code.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
            && !notLanguages.contains(code)
    }
}
