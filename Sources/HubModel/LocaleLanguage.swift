/// The one rule that turns a device's locale into the language the hub speaks to it, and the names built on it: the
/// server-owned FCM topic of each language (`lang-<code>`) and the language of a message that names none. Every layer
/// uses it (the subscriptions, the FCM mapping's per-device sends, the app's library), so a device subscribed to
/// `lang-hi` is also sent Hindi when it is sent to alone.
public enum LocaleLanguage {
    /// What every language topic starts with.
    public static let topicPrefix = "lang-"

    /// The language of a message's own texts when it names none (`DEFAULT_LANGUAGE` overrides it on the hub).
    public static let defaultLanguage = "en"

    /// Primary subtags that name no language (BCP 47: undetermined, multiple, uncoded, no linguistic content).
    static let notLanguages: Set<String> = ["und", "mul", "mis", "zxx"]

    /// The lowercased primary language subtag of `locale` ("hi-IN" → "hi", "zh-Hant-TW" → "zh", "pt_BR" → "pt",
    /// POSIX "hi_IN.UTF-8" and "sr@latin" → "hi", "sr"), or nil when it names none (absent, empty, not 2 or 3 ASCII
    /// letters, "und").
    public static func language(ofLocale locale: String?) -> String? {
        guard let locale else { return nil }
        let primary = locale.utf8.prefix {
            $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: "_") && $0 != UInt8(ascii: ".")
                && $0 != UInt8(ascii: "@")
        }
        guard let code = String(primary)?.lowercased(), isLanguage(code) else { return nil }
        return code
    }

    /// The topic of `locale`'s language (`lang-hi`), nil when it names none.
    public static func topic(forLocale locale: String?) -> String? {
        language(ofLocale: locale).map { topicPrefix + $0 }
    }

    /// Whether `code` is a lowercase language code, `^[a-z]{2,3}$`, that names a language.
    public static func isLanguage(_ code: String) -> Bool {
        (2...3).contains(code.utf8.count)
            && code.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
            && !notLanguages.contains(code)
    }
}
