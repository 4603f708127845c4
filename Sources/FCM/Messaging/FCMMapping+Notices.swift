import HubModel
/// What a later request says of a message the phones have already: its texts corrected, or the message withdrawn.
public enum FCMNotice: String, Sendable, Hashable {
    /// The texts were corrected: the pop-up replaces the one shown (same `tag` and `apns-collapse-id`), the data
    /// carries `correction: "1"` and the new texts.
    case correction
    /// The message was withdrawn: a background data message with `withdrawn: "1"`, nothing shown.
    case withdrawal
    /// Its person acknowledged the message on another device: a background data message with `acknowledged: "1"`,
    /// on which the app removes the notification it shows and marks the message acknowledged.
    case acknowledged
    /// Its person read the message on another device: a background data message with `read: "1"` and `unread`
    /// (the person's count now, also the APNs badge), on which the app marks it read and removes its notification.
    case read
}

extension FCMMapping {
    /// The one request that tells the phones of `topic` about `notice` on `message` (its texts as corrected).
    public static func noticeRequest(
        _ notice: FCMNotice, for message: RelayMessage, topic: String,
        component: FCMComponent, options: FCMMappingOptions = FCMMappingOptions()
    )
        -> FCMRequest
    {
        noticeRequest(notice, message, options, target: .topic(topic), component: component, language: nil)
    }

    /// The requests that tell the phones of `topic` about `notice` on `message`: one, or for a correction of a
    /// translated Alert one per language in `languages` (those its own requests went in: their phones show the
    /// message in that language) and one in the main language to the others, so that every phone's pop-up is
    /// replaced in the language it was shown in. A correction leaves out the phones of the quiet topics `excluding`
    /// (as many as a condition's budget has room for beside the languages); a withdrawal, shown nowhere, does not.
    public static func noticeRequests(
        _ notice: FCMNotice, for message: RelayMessage, topic: String,
        component: FCMComponent, options: FCMMappingOptions = FCMMappingOptions(),
        languages: [String], excluding: [String] = []
    ) -> [FCMRequest] {
        let split = notice == .correction && splitsLanguages(message) ? languages : []
        let quiet = notice == .correction ? Array(excluding.prefix(maximumExcludedTopics - split.count)) : []
        guard !split.isEmpty else {
            let target: Target = quiet.isEmpty ? .topic(topic) : .condition(condition(topic: topic, excluding: quiet))
            return [noticeRequest(notice, message, options, target: target, component: component, language: nil)]
        }
        let separate = split.map { code in
            noticeRequest(
                notice, message, options,
                target: .condition(condition(topic, requiring: languageTopic(code), excluding: quiet)),
                component: component, language: code)
        }
        let others = Target.condition(condition(topic, requiring: nil, excluding: quiet + split.map(languageTopic)))
        return separate + [noticeRequest(notice, message, options, target: others, component: component, language: nil)]
    }

    /// The one request that tells one device (`token`, of locale `language`) about `notice` on `message`.
    public static func noticeRequest(
        _ notice: FCMNotice, for message: RelayMessage, token: String,
        component: FCMComponent, options: FCMMappingOptions = FCMMappingOptions(),
        language: String? = nil, unread: Int? = nil
    ) -> FCMRequest {
        noticeRequest(
            notice, message, options, target: .token(token), component: component,
            language: primaryLanguage(of: language), unread: unread)
    }

    /// A correction: a displayed Alert's pop-up in `language` (its translation when it has one) under the
    /// message's key, with the data (`msi_key`, `correction`, the texts, `translations` that fit); any other
    /// message its data alone. A withdrawal: `msi_key`, `withdrawn` (and `topic_key` for a topic), in the background.
    private static func noticeRequest(
        _ notice: FCMNotice, _ message: RelayMessage, _ options: FCMMappingOptions,
        target: Target, component: FCMComponent, language: String?, unread: Int? = nil
    ) -> FCMRequest {
        var topicKey: Bool {
            if case .topic = target { return true }
            return false
        }
        switch notice {
        case .read:
            var data = ["msi_key": message.msiKey, "read": "1"]
            if let unread { data["unread"] = String(unread) }
            var wire = Wire.Message(
                notification: nil, data: data, android: backgroundAndroid(message),
                apns: backgroundAPNS(message))
            wire.apns.payload.aps.badge = unread
            target.apply(to: &wire)
            return request(component, wire, options, size: payloadSize(data: data, notification: nil), false)
        case .acknowledged:
            let data = ["msi_key": message.msiKey, "acknowledged": "1"]
            var wire = Wire.Message(
                notification: nil, data: data, android: backgroundAndroid(message),
                apns: backgroundAPNS(message))
            target.apply(to: &wire)
            return request(component, wire, options, size: payloadSize(data: data, notification: nil), false)
        case .withdrawal:
            var data = ["msi_key": message.msiKey, "withdrawn": "1"]
            if topicKey { data["topic_key"] = message.topicKey }
            var wire = Wire.Message(
                notification: nil, data: data, android: backgroundAndroid(message),
                apns: backgroundAPNS(message))
            target.apply(to: &wire)
            return request(component, wire, options, size: payloadSize(data: data, notification: nil), false)
        case .correction:
            let text = localized(message, in: language)
            var data = messageData(message, text: text, topicKey: topicKey)
            data["correction"] = "1"
            let alert = message.distribution == .alert && message.display
            var notification = alert ? Wire.Notification(title: text.title, body: text.desc, image: message.image) : nil
            let truncated = fit(&data, &notification, translations: text.others, limit: options.payloadLimit)
            var wire = Wire.Message(
                notification: notification, data: data,
                android: alert ? alertAndroid(message, options) : backgroundAndroid(message),
                apns: alert ? alertAPNS(message, options) : backgroundAPNS(message))
            target.apply(to: &wire)
            return request(
                component, wire, options, size: payloadSize(data: data, notification: notification),
                truncated)
        }
    }
}
