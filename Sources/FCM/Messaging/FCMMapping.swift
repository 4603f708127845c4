import HubModel
import JSONText

/// The FCM mapping: the spec's components, in FCM HTTP v1 form. Pure: no clock, no I/O.
public enum FCMMapping {
    /// The request bodies for `message`: an Alert's notification and data components, in that order, or an
    /// Information's data component alone. See docs/fcm-mapping.md for the table.
    ///
    /// With `excluding` topics (the quiet-hours topics of windows quiet now), each request goes to the condition
    /// `'topic' in topics && !('q' in topics) ...` instead of the topic: the devices subscribed to one of them are
    /// left out (and sent to by token when their quiet hours end). FCM allows five topics in a condition, so only the
    /// first `maximumExcludedTopics` are left out; the devices of the others get the message at once.
    ///
    /// An Alert with translations is one request per language sent separately (`lang-<code>`, to the devices on
    /// that language's topic, notification and data in that language) and one in the main language
    /// (`lang-default`, to the others), last; the quiet exclusions take the condition's budget first
    /// (`languageSplit`). `sentSeparately` names languages an earlier attempt sent in requests of their own: they
    /// keep theirs whatever the budget, before the quiet exclusions (a retry reaches nobody twice). A message with
    /// `display` false is the data component alone, whatever its distribution.
    ///
    /// With `held` (the server-owned topic of the devices whose persons hold the subject for a digest or turned it
    /// off, `held-<topic key>`), an Alert's notification component leaves those devices out too (it takes one of the
    /// condition's exclusions first): they get the data component alone, in the background. A translated Alert's
    /// requests each carry a notification, so they all leave them out: those devices read it by their catch-up.
    public static func requests(
        for message: RelayMessage, options: FCMMappingOptions = FCMMappingOptions(),
        excluding: [String] = [], sentSeparately: [String] = [], held: String? = nil
    ) -> [FCMRequest] {
        guard splitsLanguages(message) else {
            func target(_ excluding: [String]) -> Target {
                excluding.isEmpty
                    ? .topic(message.topicKey) : .condition(condition(topic: message.topicKey, excluding: excluding))
            }
            let text = localized(message, in: nil)
            guard let held, message.distribution == .alert, message.display else {
                return components(message, options, target: target(excluding), text: text)
            }
            return [
                notificationComponent(message, options, target: target([held] + excluding)),
                dataComponent(message, options, target: target(excluding), text: text),
            ]
        }
        let excluding = (held.map { [$0] } ?? []) + excluding
        let split = languageSplit(for: message, excluding: excluding, sentSeparately: sentSeparately)
        var requests = split.languages.map { code in
            combinedRequest(
                message, options,
                target: .condition(
                    condition(
                        message.topicKey, requiring: languageTopic(code),
                        excluding: split.quiet)),
                component: .language(code), text: localized(message, in: code), topicKey: true)
        }
        let others = split.quiet + split.languages.map(languageTopic)
        requests.append(
            combinedRequest(
                message, options,
                target: others.isEmpty
                    ? .topic(message.topicKey)
                    : .condition(condition(message.topicKey, requiring: nil, excluding: others)),
                component: .defaultLanguage, text: localized(message, in: nil), topicKey: true))
        return requests
    }

    /// A topic message's components sent to one device's registration token instead of the topic, the same
    /// requests otherwise (the data keeps `topic_key`): a topic message held back for a device in its quiet hours.
    /// With the device's `language` (a locale such as "hi-IN", or a primary subtag), the texts are its translation
    /// when the message has one; a translated Alert is then its one request (notification and data in that language).
    public static func requests(
        for message: RelayMessage, token: String,
        options: FCMMappingOptions = FCMMappingOptions(),
        language: String? = nil
    ) -> [FCMRequest] {
        let text = localized(message, in: primaryLanguage(of: language))
        guard splitsLanguages(message) else {
            return components(message, options, target: .token(token), text: text)
        }
        return [
            combinedRequest(
                message, options, target: .token(token),
                component: text.isTranslation ? .language(text.language ?? "") : .defaultLanguage,
                text: text, topicKey: true)
        ]
    }

    /// Whom a request goes to: `message.topic`, `message.condition` or `message.token`.
    enum Target {
        case topic(String), condition(String), token(String)

        /// Sets the target's field of `wire`.
        func apply(to wire: inout Wire.Message) {
            switch self {
            case .topic(let topic): wire.topic = topic
            case .condition(let condition): wire.condition = condition
            case .token(let token): wire.token = token
            }
        }
    }

    /// An Alert's notification and data components, or an Information's (or a non-display message's) data
    /// component, for `target`.
    private static func components(
        _ message: RelayMessage, _ options: FCMMappingOptions, target: Target,
        text: Localized
    ) -> [FCMRequest] {
        switch message.distribution {
        case .alert where message.display:
            [
                notificationComponent(message, options, target: target),
                dataComponent(message, options, target: target, text: text),
            ]
        case .alert, .information:
            [dataComponent(message, options, target: target, text: text)]
        }
    }

    // MARK: Languages

    /// Whether the message is sent one request per language: a displayed Alert with translations.
    static func splitsLanguages(_ message: RelayMessage) -> Bool {
        message.distribution == .alert && message.display && !message.translations.isEmpty
    }

    /// The FCM topic the hub subscribes a device of language `code` to: `lang-<code>`.
    public static func languageTopic(_ code: String) -> String {
        FCMComponent.languagePrefix + code
    }

    /// The language of a device of `locale`, by the rule its language topic follows (`LocaleLanguage`: "hi-IN",
    /// "hi_IN" and "hi.UTF-8" give "hi"); nil for none.
    public static func primaryLanguage(of locale: String?) -> String? {
        LocaleLanguage.language(ofLocale: locale)
    }

    /// How a translated Alert spends a condition's five topics: the subject's, then the quiet exclusions (first
    /// `maximumExcludedTopics` less those `sentSeparately` keeps), then the languages in the order given; a
    /// language past the budget is not sent separately (its devices get the main text, and the translation in the
    /// data).
    public struct LanguageSplit: Sendable, Hashable {
        /// The quiet-hours topics every request leaves out.
        public var quiet: [String]
        /// The languages sent in requests of their own, in the order of the message's translations.
        public var languages: [String]
    }

    /// The split of `message`'s translations for the quiet topics `excluding` (see `LanguageSplit`).
    public static func languageSplit(
        for message: RelayMessage, excluding: [String],
        sentSeparately: [String] = []
    ) -> LanguageSplit {
        let codes = message.translations.map(\.language).filter { $0 != message.language }
        let kept = codes.filter(sentSeparately.contains)
        let quiet = Array(excluding.prefix(maximumExcludedTopics - kept.count))
        var room = max(0, maximumExcludedTopics - quiet.count - kept.count)
        var languages: [String] = []
        for code in codes where !languages.contains(code) {
            if kept.contains(code) {
                languages.append(code)
            } else if room > 0 {
                languages.append(code)
                room -= 1
            }
        }
        return LanguageSplit(quiet: quiet, languages: languages)
    }

    /// The language a main text is named by in a translation's `translations` when the message names none.
    static let unnamedLanguage = LocaleLanguage.defaultLanguage

    /// The texts one request carries: in `language` (the message's main language when it is not a translation),
    /// with the message's other languages, in order, for the data's `translations`.
    struct Localized {
        var language: String?
        var isTranslation: Bool
        var title: String, desc: String, message: String
        var others: [RelayMessage.Translation]
    }

    /// `message`'s texts in `language` when it has that translation, else its main texts.
    static func localized(_ message: RelayMessage, in language: String?) -> Localized {
        if let translation = message.translation(for: language) {
            let main = RelayMessage.Translation(
                language: message.language ?? unnamedLanguage, title: message.title,
                desc: message.desc, message: message.message)
            return Localized(
                language: translation.language, isTranslation: true, title: translation.title,
                desc: translation.desc, message: translation.message,
                others: [main] + message.translations.filter { $0.language != translation.language })
        }
        return Localized(
            language: message.language, isTranslation: false, title: message.title, desc: message.desc,
            message: message.message,
            others: message.translations.filter { $0.language != message.language })
    }

    /// `translations` as the data's compact JSON object, in order: `{"hi":{"title":..,"desc":..,"message":..}}`.
    static func translationsJSON(_ translations: [RelayMessage.Translation]) -> String {
        var output: [UInt8] = [UInt8(ascii: "{")]
        for (index, translation) in translations.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONString.append(translation.language, to: &output)
            output.append(contentsOf: Array(#":{"title":"#.utf8))
            JSONString.append(translation.title, to: &output)
            output.append(contentsOf: Array(#","desc":"#.utf8))
            JSONString.append(translation.desc, to: &output)
            output.append(contentsOf: Array(#","message":"#.utf8))
            JSONString.append(translation.message, to: &output)
            output.append(UInt8(ascii: "}"))
        }
        output.append(UInt8(ascii: "}"))
        return String(decoding: output, as: UTF8.self)
    }

    /// The most topics a condition leaves out: FCM takes at most five topics in a condition, one is the message's.
    public static let maximumExcludedTopics = 4

    /// `'topic' in topics && !('a' in topics) && ...` for the first `maximumExcludedTopics` of `excluding`.
    public static func condition(topic: String, excluding: [String]) -> String {
        (["'\(topic)' in topics"] + excluding.prefix(maximumExcludedTopics).map { "!('\($0)' in topics)" })
            .joined(separator: " && ")
    }

    /// `'topic' in topics` and `'required' in topics` when given, then `!('e' in topics)` for each of `excluding`.
    static func condition(_ topic: String, requiring required: String?, excluding: [String]) -> String {
        ([topic] + (required.map { [$0] } ?? [])).map { "'\($0)' in topics" }
            .joined(separator: " && ")
            + excluding.map { " && !('\($0)' in topics)" }.joined()
    }

    // MARK: Urgency

    /// The level APNs gets: `critical` only with the entitlement (`criticalAlerts`), else `time-sensitive`.
    static func apnsLevel(_ urgency: RelayMessage.Urgency, _ options: FCMMappingOptions) -> RelayMessage.Urgency {
        urgency == .critical && !options.criticalAlerts ? .timeSensitive : urgency
    }

    /// `aps.relevance-score` of each urgency: the notification summary puts the most urgent first.
    static func relevanceScore(_ urgency: RelayMessage.Urgency) -> Double {
        switch urgency {
        case .passive: 0.2
        case .active: 0.5
        case .timeSensitive: 0.8
        case .critical: 1.0
        }
    }

    /// The `aps` of a pop-up: its interruption level and relevance, and its sound (none for a passive one, the
    /// critical sound for a critical one APNs may play as such).
    static func alertAPS(_ message: RelayMessage, _ options: FCMMappingOptions) -> Wire.APS {
        let level = apnsLevel(message.urgency, options)
        let sound: Wire.Sound? =
            switch level {
            case .passive: nil
            case .active, .timeSensitive: "default"
            case .critical: .critical(name: "default", volume: 1.0)
            }
        return Wire.APS(
            sound: sound, contentAvailable: nil, interruptionLevel: level.rawValue,
            relevanceScore: relevanceScore(message.urgency), threadID: message.room,
            category: message.ackResponses.map { ackCategory(responses: $0.count) })
    }

    /// The APNs category of an acknowledgement with `responses` answers, `MSI_ACK_<n>`: its actions are the
    /// answers in order (MSIKit registers `MSI_ACK_0`, a plain acknowledgement, to `MSI_ACK_10`), so a person
    /// answers from the lock screen.
    public static func ackCategory(responses: Int) -> String { "MSI_ACK_\(responses)" }

    /// What a notification is shown as, and replaced by: a room's thread (the newest of a room replaces the older
    /// ones), else the message's key (a correction replaces its pop-up).
    static func notificationTag(_ message: RelayMessage) -> String { message.room ?? message.msiKey }

    /// `android.priority`: `HIGH` (wakes the phone at once) for active and above, `NORMAL` for passive.
    static func androidPriority(_ message: RelayMessage) -> String {
        message.urgency.isImmediate ? "HIGH" : "NORMAL"
    }

    /// The `android` block of a pop-up: priority, ttl, and the notification on the urgency's channel.
    /// Its `tag` is the message's key, so a correction's pop-up replaces the one the phone shows; a room's messages
    /// share the room's (`notificationTag`).
    static func alertAndroid(_ message: RelayMessage, _ options: FCMMappingOptions) -> Wire.Android {
        Wire.Android(
            priority: androidPriority(message), ttl: androidTTL(message),
            notification: .init(
                sound: "default", channelID: options.androidChannels[message.urgency],
                image: message.image, tag: notificationTag(message)))
    }

    /// The `android` block of a data message: no notification; a non-display message wakes the phone at once only
    /// when time-sensitive or critical.
    static func backgroundAndroid(_ message: RelayMessage) -> Wire.Android {
        let priority =
            message.display
            ? androidPriority(message)
            : (message.urgency >= .timeSensitive ? "HIGH" : "NORMAL")
        return Wire.Android(priority: priority, ttl: androidTTL(message), notification: nil)
    }

    /// The `apns` block of a pop-up: its priority and expiry, its `aps`, and a poster (`fcm_options.image`, with
    /// `mutable-content` so that the notification service extension may attach it), and `apns-collapse-id`, the
    /// message's key (24 hex digits, within APNs' 64 bytes), so a correction's pop-up replaces the one shown.
    static func alertAPNS(_ message: RelayMessage, _ options: FCMMappingOptions) -> Wire.APNS {
        var headers = [
            "apns-priority": message.urgency.isImmediate ? "10" : "5", "apns-collapse-id": notificationTag(message),
        ]
        headers.merge(expirationHeaders(message)) { $1 }
        var aps = alertAPS(message, options)
        if message.image != nil { aps.mutableContent = 1 }
        return Wire.APNS(
            headers: headers, payload: .init(aps: aps),
            fcmOptions: message.image.map(Wire.FCMOptions.init))
    }

    /// The `apns` block of a data message: a background push (APNs refuses one whose priority is not 5).
    static func backgroundAPNS(_ message: RelayMessage) -> Wire.APNS {
        var headers = ["apns-push-type": "background", "apns-priority": "5"]
        headers.merge(expirationHeaders(message)) { $1 }
        return Wire.APNS(headers: headers, payload: .init(aps: .init(sound: nil, contentAvailable: 1)))
    }

    /// The notification component: a pop-up with the message's key, so the app can open it.
    private static func notificationComponent(
        _ message: RelayMessage, _ options: FCMMappingOptions,
        target: Target
    ) -> FCMRequest {
        var notification = Wire.Notification(title: message.title, body: message.desc, image: message.image)
        var data = ["msi_key": message.msiKey, "urgency": message.urgency.rawValue]
        // The responses too: Android shows them as the notification's actions (iOS has them in its category).
        addAck(message, to: &data)
        if let room = message.room { data["group"] = room }
        var truncated = false
        if payloadSize(data: data, notification: notification) > options.payloadLimit {
            truncated = true
            data["truncated"] = "true"
            notification = cutNotification(notification, data: data, limit: options.payloadLimit)
        }
        var wire = Wire.Message(
            notification: notification,
            data: data,
            android: alertAndroid(message, options),
            apns: alertAPNS(message, options)
        )
        target.apply(to: &wire)
        let size = payloadSize(data: data, notification: notification)
        return request(.notification, wire, options, size: size, truncated)
    }

    /// The data component: every field as a string, delivered silently (an APNs background push), its texts in
    /// `text`'s language.
    private static func dataComponent(
        _ message: RelayMessage, _ options: FCMMappingOptions,
        target: Target, text: Localized
    ) -> FCMRequest {
        var data = messageData(message, text: text, topicKey: true)
        var notification: Wire.Notification?
        // The full text stays at GET /message/:msiKey; the phone fetches it when it sees `truncated`.
        let truncated = fit(&data, &notification, translations: text.others, limit: options.payloadLimit)
        var wire = Wire.Message(
            notification: nil, data: data, android: backgroundAndroid(message),
            apns: backgroundAPNS(message))
        target.apply(to: &wire)
        return request(.data, wire, options, size: payloadSize(data: data, notification: nil), truncated)
    }

    /// One request carrying an Alert's notification and its data in `text`'s language (a translated Alert's
    /// language request, or its token send), or, for an Information or a non-display message, the data alone.
    private static func combinedRequest(
        _ message: RelayMessage, _ options: FCMMappingOptions, target: Target,
        component: FCMComponent, text: Localized, topicKey: Bool,
        extra: [String: String?] = [:], background: Bool = false, badge: Int? = nil, body: String? = nil
    ) -> FCMRequest {
        var data = messageData(message, text: text, topicKey: topicKey)
        for (key, value) in extra { data[key] = value }
        let alert = message.distribution == .alert && message.display && !background
        var notification =
            alert ? Wire.Notification(title: text.title, body: body ?? text.desc, image: message.image) : nil
        // The phone fetches the full text when it sees `truncated`; the pop-up's title is cut last.
        let truncated = fit(&data, &notification, translations: text.others, limit: options.payloadLimit)
        var wire = Wire.Message(
            notification: notification,
            data: data,
            android: alert ? alertAndroid(message, options) : backgroundAndroid(message),
            apns: alert ? alertAPNS(message, options) : backgroundAPNS(message)
        )
        if alert, let badge { wire.apns.payload.aps.badge = badge }
        target.apply(to: &wire)
        return request(component, wire, options, size: payloadSize(data: data, notification: notification), truncated)
    }

    /// The one request for a device of a message to persons and groups (`message.token`): an Alert's notification
    /// (title, desc) with the data, or an Information's data alone, delivered silently as the data component is.
    /// The data holds `msi_key`, `dist`, `title`, `desc`, `message`, `timestamp`, `audience` ("person" or "group"),
    /// `group` when reached through one, `ack` and `ack_responses` when it asks for an acknowledgement, and the
    /// message's own `data`. Over the payload limit, the data's message,
    /// desc and title are cut first, then the notification's body and title (`truncated: "true"`).
    /// With the device's `language` (its locale, "hi-IN", or a primary subtag), the texts are that translation when
    /// the message has it.
    /// A `muted` device (its person muted the group) gets the data alone in the background, `muted: "1"`, never a
    /// pop-up or a sound. With its person's `unread` count the pop-up's APNs `badge` and the data's `unread` say it;
    /// a room's message with more than one of the room's unread (`roomUnread`) says so in its pop-up ("3 new
    /// messages in Chess team"), the newest replacing the others in the room's thread.
    public static func deviceRequest(
        for message: RelayMessage, token: String, audience: FCMAudience,
        options: FCMMappingOptions = FCMMappingOptions(),
        language: String? = nil, muted: Bool = false, unread: Int? = nil, roomUnread: Int? = nil
    ) -> FCMRequest {
        // The sender's keys never collide with the hub's (the send rules reserve them); the hub's win regardless.
        var extra: [String: String?] =
            switch audience {
            case .person: ["audience": "person", "group": nil]
            case .group(let id): ["audience": "group", "group": id]
            case .cohort: ["audience": "cohort", "group": nil]
            case .digest: ["audience": "digest", "group": nil]
            }
        if muted { extra["muted"] = "1" }
        if let unread { extra["unread"] = String(unread) }
        var body: String?
        if let room = message.room, let count = roomUnread, count > 1 {
            body = "\(count) new messages in \(message.roomName ?? room)"
        }
        return combinedRequest(
            message, options, target: .token(token), component: .device,
            text: localized(message, in: primaryLanguage(of: language)), topicKey: audience == .cohort,
            extra: extra, background: muted, badge: unread, body: body)
    }

    /// The data of a data component or a combined request: the sender's `data`, then the hub's keys (which win),
    /// texts in `text`'s language, and the message's broadcast fields.
    static func messageData(_ message: RelayMessage, text: Localized, topicKey: Bool) -> [String: String] {
        var data = message.data
        data["msi_key"] = message.msiKey
        if topicKey { data["topic_key"] = message.topicKey }
        data["dist"] = message.distribution.rawValue
        data["title"] = text.title
        data["desc"] = text.desc
        data["message"] = text.message
        data["timestamp"] = String(message.timestamp)
        data["urgency"] = message.urgency.rawValue
        addAck(message, to: &data)
        if let room = message.room { data["group"] = room }
        if let language = text.language { data["lang"] = language }
        if let image = message.image { data["image"] = image }
        if let kind = message.kind, kind != "general" { data["kind"] = kind }
        if !message.dismissible { data["dismissible"] = "false" }
        if !message.display { data["display"] = "false" }
        if let expiry = message.senderExpiresAt { data["expires_at"] = String(expiry) }
        return data
    }

    /// Makes `data` and `notification` fit `limit`; true when something was left out or cut (`truncated` set).
    /// The translations go in first, in order, each while it fits (with `truncated` when one does not); when the
    /// rest alone does not fit, none goes in and the data's texts are cut (`cutTexts`), then the notification's body
    /// and title.
    static func fit(
        _ data: inout [String: String], _ notification: inout Wire.Notification?,
        translations: [RelayMessage.Translation], limit: Int
    ) -> Bool {
        if !translations.isEmpty {
            data["translations"] = translationsJSON(translations)
            if payloadSize(data: data, notification: notification) <= limit { return false }
            data["truncated"] = "true"
            var kept: [RelayMessage.Translation] = []
            for translation in translations {
                data["translations"] = translationsJSON(kept + [translation])
                if payloadSize(data: data, notification: notification) <= limit { kept.append(translation) }
            }
            data["translations"] = kept.isEmpty ? nil : translationsJSON(kept)
            if payloadSize(data: data, notification: notification) <= limit { return true }
        }
        guard payloadSize(data: data, notification: notification) > limit else { return false }
        cutTexts(&data, notification: notification, limit: limit)
        notification = notification.map { cutNotification($0, data: data, limit: limit) }
        return true
    }

    /// `notification` with its body cut, then its title, until it fits `limit` beside `data` (its image kept).
    private static func cutNotification(_ notification: Wire.Notification, data: [String: String], limit: Int)
        -> Wire.Notification
    {
        let fits = { (candidate: Wire.Notification) in payloadSize(data: data, notification: candidate) <= limit }
        var shown = notification
        // The body (desc) goes first: the title is what a person reads on the lock screen.
        shown.body = cut(notification.body) {
            var trial = shown; trial.body = $0; return fits(trial)
        }
        shown.title = cut(notification.title) {
            var trial = shown; trial.title = $0; return fits(trial)
        }
        return shown
    }

    static func request(
        _ component: FCMComponent,
        _ message: Wire.Message,
        _ options: FCMMappingOptions,
        size: Int,
        _ truncated: Bool
    ) -> FCMRequest {
        let body = Wire.SendRequest(message: message, validateOnly: options.validateOnly ? true : nil)
        return FCMRequest(
            component: component, body: FCMJSON.bytes(body.json), payloadSize: size,
            isTruncated: truncated)
    }

    /// `android.ttl`: "<seconds>s", at most 4 weeks. With the sender's `expires_at`, what is left of the expiry
    /// at `sendingAt` (or at `timestamp`).
    private static func androidTTL(_ message: RelayMessage) -> String? {
        if message.senderExpiresAt != nil, let expiry = message.effectiveExpiry {
            let left = max(0, (expiry - (message.sendingAt ?? message.timestamp) + 999) / 1000)
            return "\(min(left, FCMMappingOptions.maximumTTLSeconds))s"
        }
        guard let ttl = message.ttlSeconds ?? message.expiresAt.map({ max(0, ($0 - message.timestamp + 999) / 1000) })
        else { return nil }
        return "\(min(max(0, ttl), FCMMappingOptions.maximumTTLSeconds))s"
    }

    /// `apns-expiration`: the expiry in Unix seconds ("0" for a ttl of 0: deliver once, never store).
    private static func expirationHeaders(_ message: RelayMessage) -> [String: String] {
        if message.ttlSeconds == 0 { return ["apns-expiration": "0"] }
        guard let expiry = message.effectiveExpiry else { return [:] }
        return ["apns-expiration": String(max(0, expiry / 1000))]
    }

    /// The payload size: compact JSON of `data`, plus compact JSON of `notification` when there is one.
    static func payloadSize(data: [String: String], notification: Wire.Notification?) -> Int {
        FCMJSON.bytes(FCMJSON.object(data)).count + (notification.map { FCMJSON.bytes($0.json).count } ?? 0)
    }

    /// Marks `data` `truncated` and cuts its texts (the message, then `desc`, then the title) until the payload, with
    /// `notification`, fits `limit`; if it still does not, leaves out `ack_responses` (the phone reads them from the
    /// hub, as it reads a truncated message; `ack` stays, so it knows to).
    private static func cutTexts(_ data: inout [String: String], notification: Wire.Notification?, limit: Int) {
        data["truncated"] = "true"
        for field in ["message", "desc", "title"] {
            data[field] = cut(data[field] ?? "") { candidate in
                var trial = data
                trial[field] = candidate
                return payloadSize(data: trial, notification: notification) <= limit
            }
        }
        if payloadSize(data: data, notification: notification) > limit { data["ack_responses"] = nil }
    }

    // MARK: Acknowledgement

    /// Adds `ack` ("1") and `ack_responses` (a JSON array of the responses, `[]` for a plain acknowledgement) when
    /// the message asks for an acknowledgement; leaves `data` as it is otherwise.
    static func addAck(_ message: RelayMessage, to data: inout [String: String]) {
        guard let responses = message.ackResponses else { return }
        data["ack"] = "1"
        data["ack_responses"] = jsonArray(responses)
    }

    /// `strings` as a compact JSON array (FCM's data values are strings: the phone parses this one).
    static func jsonArray(_ strings: [String]) -> String {
        var output: [UInt8] = [UInt8(ascii: "[")]
        for (index, string) in strings.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONString.append(string, to: &output)
        }
        output.append(UInt8(ascii: "]"))
        return String(decoding: output, as: UTF8.self)
    }

    /// The longest prefix of `text`, in whole Characters, for which `fits` holds ("" if none does).
    private static func cut(_ text: String, fits: (String) -> Bool) -> String {
        if fits(text) { return text }
        let characters = Array(text)
        // Longer prefixes never measure smaller, so the fitting lengths are 0..<n for some n: binary search.
        var low = 0
        var high = characters.count
        while low < high {
            let middle = (low + high + 1) / 2
            if fits(String(characters[..<middle])) {
                low = middle
            } else {
                high = middle - 1
            }
        }
        return String(characters[..<low])
    }
}
