import Foundation
import HubModel

/// A message's texts in one language: its title (a notification's title), its `desc` (a notification's body) and
/// the text the app shows.
public struct MessageText: Sendable, Hashable, Codable {
    public var title: String
    public var desc: String
    public var text: String

    /// Creates texts.
    public init(title: String, desc: String = "", text: String = "") {
        self.title = title
        self.desc = desc
        self.text = text
    }

    /// The language a message without `lang` is taken to be in when a translation replaces its texts (the hub's
    /// default language, as its FCM mapping names it).
    static let unnamedLanguage = LocaleLanguage.defaultLanguage

    /// The language of a locale as the hub matches phones (`LocaleLanguage`: "hi-IN" → "hi", "zh_Hant_TW" → "zh",
    /// "hi.UTF-8" → "hi"); nil for a locale that names none.
    public static func language(of locale: String?) -> String? {
        LocaleLanguage.language(ofLocale: locale)
    }

    /// The hub's `translations` ({"hi": {"title", "desc", "message"}}) as the push carries them: a JSON object
    /// string; nil when it is not one. An entry without a title is left out.
    static func translations(json: String) -> [String: MessageText]? {
        guard let data = json.data(using: .utf8),
            let decoded = try? JSONDecoder().decode([String: HubText].self, from: data)
        else { return nil }
        return decoded.compactMapValues(\.text)
    }

    /// One translation as the hub writes it (`message` is the app's text).
    struct HubText: Decodable, Sendable {
        var title: String?
        var desc: String?
        var message: String?

        var text: MessageText? {
            title.map { MessageText(title: $0, desc: desc ?? "", text: message ?? "") }
        }
    }
}
