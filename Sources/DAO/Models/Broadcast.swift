import Mongo

/// How a message is presented on the phones beyond its text: its languages, poster, kind, expiry, whether it is shown
/// at all, and, for a topic, the sample of devices it goes to. Every field is stored only when the sender gave it, so
/// a message without any is stored (and sent) as before: `Broadcast()` stores nothing.
public struct Broadcast: Sendable, Equatable {
    /// One translation of the message's texts.
    public struct Text: Sendable, Equatable {
        public var title: String
        public var desc: String
        public var message: String

        public init(title: String, desc: String = "", message: String = "") {
            (self.title, self.desc, self.message) = (title, desc, message)
        }
    }

    /// The kinds of banner an app keeps showing at launch until they expire (`kind`), beside non-dismissible ones.
    public static let bannerKinds: Set<String> = ["downtime", "greeting"]
    /// The kind of a message stored without one.
    public static let defaultKind = "general"

    /// The language of the message's own texts (`lang`); nil when the sender named none and gave no translations.
    public var language: String?
    /// The texts in other languages, in the order the sender gave them (`translations`).
    public var translations: [(language: String, text: Text)]
    /// The poster: an https URL (`image`).
    public var image: String?
    /// `general`, `downtime`, `greeting` or a name of the school's own (`kind`); nil: general.
    public var kind: String?
    /// Whether the person may dismiss the banner (`dismissible`); false: the app keeps it until it expires.
    public var dismissible: Bool
    /// When the message stops being shown, sent and caught up with, Unix ms (`expires_at`).
    public var expiresAt: Int64?
    /// Whether the phone shows it (`display`); false: a background data message the app acts on (feature flags).
    public var display: Bool
    /// The share of a topic's registered devices it goes to, in (0, 1) (`sample`); nil: all of them.
    public var sample: Double?
    /// The name whose hash with a device id picks the sample (`cohort`): the same name picks the same devices.
    public var cohort: String?

    public init(
        language: String? = nil, translations: [(language: String, text: Text)] = [], image: String? = nil,
        kind: String? = nil, dismissible: Bool = true, expiresAt: Int64? = nil, display: Bool = true,
        sample: Double? = nil, cohort: String? = nil
    ) {
        self.language = language
        self.translations = translations
        self.image = image
        self.kind = kind
        self.dismissible = dismissible
        self.expiresAt = expiresAt
        self.display = display
        self.sample = sample
        self.cohort = cohort
    }

    /// Reads the fields of a stored message (absent ones take their defaults).
    public init(message document: BSONDocument) {
        self.init()
        language = document["lang"]?.stringValue
        translations = (document["translations"]?.documentValue ?? [:]).compactMap { language, value in
            guard let text = value.documentValue, let title = text["title"]?.stringValue else { return nil }
            return (
                language,
                Text(
                    title: title, desc: text["desc"]?.stringValue ?? "",
                    message: text["message"]?.stringValue ?? "")
            )
        }
        image = document["image"]?.stringValue
        kind = document["kind"]?.stringValue
        dismissible = document["dismissible"]?.boolValue ?? true
        expiresAt = document["expires_at"]?.int64Value
        display = document["display"]?.boolValue ?? true
        sample = document["sample"]?.doubleValue
        cohort = document["cohort"]?.stringValue
    }

    /// The fields to store beside the message's own, only those the sender gave.
    public var document: BSONDocument {
        var fields: [(key: String, value: BSONValue)] = []
        if let language { fields.append(("lang", .string(language))) }
        if !translations.isEmpty {
            fields.append(
                (
                    "translations",
                    .document(
                        BSONDocument(
                            translations.map { language, text in
                                (
                                    language,
                                    .document([
                                        "title": .string(text.title), "desc": .string(text.desc),
                                        "message": .string(text.message),
                                    ])
                                )
                            }))
                ))
        }
        if let image { fields.append(("image", .string(image))) }
        if let kind { fields.append(("kind", .string(kind))) }
        if !dismissible { fields.append(("dismissible", false)) }
        if let expiresAt { fields.append(("expires_at", .int64(expiresAt))) }
        if !display { fields.append(("display", false)) }
        if let sample { fields.append(("sample", .double(sample))) }
        if let cohort { fields.append(("cohort", .string(cohort))) }
        // What the active-banner lists query (their index holds only these messages).
        if isBanner { fields.append(("banner", true)) }
        return BSONDocument(fields)
    }

    /// Whether an app shows it as a banner at launch while it lasts: a downtime or greeting, or one the person
    /// may not dismiss (`GET /broadcasts/active`).
    public var isBanner: Bool {
        display && (!dismissible || kind.map(Self.bannerKinds.contains) == true)
    }

    /// Whether `device` is in the sample (`sample` of the devices, picked by `cohort`); true without a sample.
    public func picks(device: ObjectID) -> Bool {
        guard let sample else { return true }
        return Self.position(of: device, in: cohort ?? "default") < sample
    }

    /// Where `device` falls in the cohort `name`, uniformly in [0, 1): a hash of the device id and the name (64-bit
    /// FNV-1a, then the SplitMix64 finaliser to spread the ids' shared prefixes), the same on every replica and every
    /// run, so one cohort name picks the same devices each time and different names pick independently.
    public static func position(of device: ObjectID, in name: String) -> Double {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(device.hex.utf8) + [0x3A] + Array(name.utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        hash ^= hash >> 31
        return Double(hash >> 11) / Double(UInt64(1) << 53)
    }

    public static func == (lhs: Broadcast, rhs: Broadcast) -> Bool {
        lhs.document == rhs.document
    }
}
