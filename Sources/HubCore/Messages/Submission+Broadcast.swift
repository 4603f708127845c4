import DAO
import Foundation
import Mongo

/// The send rules of a message's presentation (`Broadcast`): its languages, poster, kind, expiry, display and sample.
/// The one reading of those fields that POST /message and the portal's form share, and the rules that need the rest
/// of the submission (an Alert's translated `desc`, a non-display message's `data`, a sample's topic).
extension MessageService.Submission {
    /// The most translations one message carries.
    public static let maximumTranslations = 20
    /// The longest poster URL, in bytes.
    public static let maximumImageBytes = 1_024
    /// The longest expiry ahead of now: the furthest schedule (90 days) and FCM's longest ttl (28 days).
    public static let maximumExpiryMS: Int64 = (90 + 28) * 24 * 3600 * 1000

    /// The fields of `body` that say how the message is presented (`lang`, `translations`, `image`, `kind`,
    /// `dismissible`, `expires_at`, `display`, `sample`, `cohort`); `Broadcast()` when it has none of them.
    /// - Parameters:
    ///   - defaultLanguage: the language of the texts when `translations` are given without `lang`
    ///     (`DEFAULT_LANGUAGE`).
    ///   - now: the time (Unix ms) an expiry must be after.
    /// - Throws: `SendRefusal` (`.invalidTranslations`, `.invalidImage`, `.invalidKind`, `.invalidExpiry`,
    ///   `.invalidDisplay`, `.invalidSample`) naming the rule broken.
    public static func broadcast(from body: BSONDocument, defaultLanguage: String, now: Int64) throws -> Broadcast {
        var broadcast = Broadcast()
        if let value = present(body["lang"]) {
            guard let code = value.stringValue.flatMap(Self.languageCode) else {
                throw SendRefusal(
                    .invalidTranslations, "the field \"lang\" must be a language code such as \"en\" or \"hi\"")
            }
            broadcast.language = code
        }
        if let value = present(body["translations"]) {
            broadcast.translations = try translations(value)
            broadcast.language = broadcast.language ?? defaultLanguage
            if let language = broadcast.language, broadcast.translations.contains(where: { $0.language == language }) {
                throw SendRefusal(
                    .invalidTranslations,
                    "the field \"translations\" must not repeat the message's own language \"\(language)\"")
            }
        }
        if let value = present(body["image"]) {
            guard let url = value.stringValue, Self.isPosterURL(url) else {
                throw SendRefusal(
                    .invalidImage, "the field \"image\" must be an https URL of at most \(maximumImageBytes) bytes")
            }
            broadcast.image = url
        }
        if let value = present(body["kind"]) {
            guard let kind = value.stringValue, Self.isKind(kind) else {
                throw SendRefusal(
                    .invalidKind,
                    "the field \"kind\" must be general, downtime, greeting or a name of "
                        + "1 to 32 of a-z 0-9 _ - starting with a letter")
            }
            broadcast.kind = kind
        }
        if let value = present(body["dismissible"]) {
            guard let flag = value.boolValue else {
                throw SendRefusal(.invalidKind, "the field \"dismissible\" must be true or false")
            }
            broadcast.dismissible = flag
        }
        if let value = present(body["expires_at"]) {
            guard let at = Self.time(value), at > now, at - now <= maximumExpiryMS else {
                throw SendRefusal(
                    .invalidExpiry,
                    "the field \"expires_at\" must be a time in the next 118 days, in Unix "
                        + "milliseconds or RFC 3339 (2026-12-24T18:00:00Z)")
            }
            broadcast.expiresAt = at
        }
        if let value = present(body["display"]) {
            guard let flag = value.boolValue else {
                throw SendRefusal(.invalidDisplay, "the field \"display\" must be true or false")
            }
            broadcast.display = flag
        }
        if let value = present(body["sample"]) {
            guard let share = value.doubleValue, share > 0, share < 1 else {
                throw SendRefusal(.invalidSample, "the field \"sample\" must be a number between 0 and 1, such as 0.1")
            }
            broadcast.sample = share
        }
        if let value = present(body["cohort"]) {
            guard let name = value.stringValue, Self.isCohortName(name) else {
                throw SendRefusal(.invalidSample, "the field \"cohort\" must be 1 to 64 of A-Z a-z 0-9 _ -")
            }
            guard broadcast.sample != nil else {
                throw SendRefusal(.invalidSample, "the field \"cohort\" needs \"sample\"")
            }
            broadcast.cohort = name
        }
        if broadcast.sample != nil, broadcast.cohort == nil { broadcast.cohort = Self.defaultCohort }
        return broadcast
    }

    /// The cohort a sample is picked by when the sender names none.
    public static let defaultCohort = "default"

    /// The refusal of a presentation that does not fit the rest of the submission: an Alert's translation without
    /// its `desc`, a non-display message without `data` or with something to show, a sample of no topic, an expiry
    /// before the send time; nil when it fits.
    var broadcastRefusal: SendRefusal? {
        if distribution == .alert, broadcast.display,
            let language = broadcast.translations.first(where: { $0.text.desc.isEmpty })?.language
        {
            return SendRefusal(
                .invalidTranslations,
                "the translation \"\(language)\" needs its \"desc\" for an Alert: "
                    + "it is the push notification's body")
        }
        if !broadcast.display {
            if data.isEmpty {
                return SendRefusal(
                    .invalidDisplay, "a message with \"display\": false carries a \"data\" object for the app")
            }
            if broadcast.image != nil || !broadcast.translations.isEmpty || ack != nil {
                return SendRefusal(
                    .invalidDisplay,
                    "a message with \"display\": false shows nothing: it takes no "
                        + "\"image\", \"translations\" or \"ack\"")
            }
        }
        if broadcast.sample != nil, recipients != nil {
            return SendRefusal(
                .invalidSample, "\"sample\" picks devices of a topic: it needs \"topic_key\", not \"to\"")
        }
        if let expiresAt = broadcast.expiresAt, let sendAt, expiresAt <= sendAt {
            return SendRefusal(.invalidExpiry, "the field \"expires_at\" must be after \"send_at\"")
        }
        return nil
    }

    /// The translations of `value`: an object of language codes to `{"title", "desc"?, "message"?}`.
    private static func translations(_ value: BSONValue) throws -> [(language: String, text: Broadcast.Text)] {
        func refuse(_ problem: String) -> SendRefusal {
            SendRefusal(.invalidTranslations, "the field \"translations\" \(problem)")
        }
        guard let object = value.documentValue else { throw refuse("must be an object of language codes to texts") }
        guard object.count <= maximumTranslations else {
            throw refuse("holds at most \(maximumTranslations) languages")
        }
        var seen = Set<String>()
        return try object.map { key, value in
            guard let language = languageCode(key), language == key, seen.insert(language).inserted else {
                throw refuse("must have lowercase language codes (\"hi\", \"ta\") as keys, each once")
            }
            guard let text = value.documentValue else { throw refuse("must have an object of texts for \"\(key)\"") }
            if let unknown = text.elements.map(\.key).first(where: { !["title", "desc", "message"].contains($0) }) {
                throw refuse("has no field \"\(key).\(unknown)\" (title, desc, message)")
            }
            var texts: [MessageField: String] = [:]
            for field in [MessageField.title, .desc, .message] {
                guard let entry = present(text[field.rawValue]) else { continue }
                guard let string = entry.stringValue else {
                    throw refuse("must have \"\(key).\(field.rawValue)\" as a string")
                }
                guard string.count <= field.maxLength else {
                    throw refuse("has \"\(key).\(field.rawValue)\" longer than \(field.maxLength) characters")
                }
                texts[field] = string
            }
            guard let title = texts[.title], !title.isEmpty else { throw refuse("must have \"\(key).title\"") }
            return (language, Broadcast.Text(title: title, desc: texts[.desc] ?? "", message: texts[.message] ?? ""))
        }
    }

    /// A language code as the hub keeps it: a two- or three-letter primary subtag, lowercased ("EN" → "en"); nil for
    /// anything else (a region, a script, a longer tag: the hub matches phones by their locale's primary subtag).
    public static func languageCode(_ text: String) -> String? {
        guard (2...3).contains(text.utf8.count),
            text.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic })
        else { return nil }
        return text.lowercased()
    }

    /// Whether `url` is an https URL with a host, of at most `maximumImageBytes`, without spaces or controls.
    static func isPosterURL(_ url: String) -> Bool {
        guard url.utf8.count <= maximumImageBytes, url.lowercased().hasPrefix("https://"),
            url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
            let parsed = URL(string: url), parsed.scheme?.lowercased() == "https", let host = parsed.host, !host.isEmpty
        else { return false }
        return true
    }

    /// Whether `kind` is 1 to 32 of `a-z 0-9 _ -` starting with a letter.
    static func isKind(_ kind: String) -> Bool {
        guard (1...32).contains(kind.utf8.count), let first = kind.unicodeScalars.first, ("a"..."z").contains(first)
        else { return false }
        return kind.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
        }
    }

    /// Whether `name` is 1 to 64 of `A-Z a-z 0-9 _ -`.
    static func isCohortName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
            }
    }

    /// A time given as Unix milliseconds (an integer) or an RFC 3339 string; nil for anything else.
    static func time(_ value: BSONValue) -> Int64? {
        switch value {
        case .int32(let ms): return Int64(ms)
        case .int64(let ms): return ms
        case .double(let ms) where ms.rounded() == ms && abs(ms) < 1e15: return Int64(ms)
        case .string(let text):
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
        default: return nil
        }
    }

    /// The value, unless absent or null.
    private static func present(_ value: BSONValue?) -> BSONValue? {
        guard let value, !value.isNull else { return nil }
        return value
    }
}
