import DAO
import Foundation
import HubCore
import HubModel
import Mongo

/// The send form's fields beyond the recipients and the texts: urgency, an acknowledgement asked, translations, a
/// poster, the kind, dismissible, an expiry, display and the app's data. The form's fields are put in the shape POST
/// /message takes and read by the same HubCore readings (`Submission.urgency(named:)`, `Submission.ack(from:)`,
/// `MessageService.broadcast(from:)`), so no rule has a second copy here; only the form's own shape is read here
/// (rows of repeated fields, minutes, checkboxes).
struct SendOptions {
    /// One translation row as filled in.
    struct Translation: Equatable {
        /// The row's language code (lowercased), title, notification text and message, trimmed.
        var language = "", title = "", desc = "", message = ""

        /// Whether every field of the row is empty (a row left blank is no translation).
        var isBlank: Bool { language.isEmpty && title.isEmpty && desc.isEmpty && message.isEmpty }
    }

    /// The kinds the form's select offers; any other is typed in as the school's own.
    static let offeredKinds = ["general", "downtime", "greeting"]
    /// The select's value that asks for a kind of the school's own.
    static let ownKind = "own"

    /// The urgency chosen; "" for the default.
    var urgency = ""
    /// Whether an acknowledgement is asked for (`ack` ticked).
    var ackRequested = false
    /// The responses, one a line.
    var ackResponses = ""
    /// How long the recipients have to answer, in minutes, as typed.
    var ackWithinMinutes = ""
    /// How many times a device that has not answered gets it again, as typed.
    var ackResend = ""
    /// The language of the main texts (`lang`); "" for the hub's default.
    var language = ""
    /// The translation rows filled in, in order (blank rows left out).
    var translations: [Translation] = []
    /// The poster's URL, as typed.
    var image = ""
    /// One of `offeredKinds` or `ownKind`.
    var kind = "general"
    /// The kind of the school's own, typed beside the select.
    var ownKindName = ""
    /// Whether the person may dismiss the banner (the box ticked, or the field absent).
    var dismissible = true
    /// The expiry the script sent: RFC 3339 with the browser's offset.
    var expiresAt = ""
    /// The expiry as typed in the `datetime-local` field (read as UTC when the script sent none).
    var expiresLocal = ""
    /// When to send, as typed in the `datetime-local` field on the school's wall clock; "" to send now.
    var sendAtLocal = ""
    /// Whether the phone shows it (the box ticked, or the field absent).
    var display = true
    /// The data rows filled in, in order (blank rows left out).
    var data: [(key: String, value: String)] = []

    init() {}

    /// The fields of a posted form.
    init(form: PortalForm) {
        urgency = form.trimmed("urgency")
        ackRequested = form["ack"] != nil
        ackResponses = form.trimmed("ack_responses")
        ackWithinMinutes = form.trimmed("ack_within_min")
        ackResend = form.trimmed("ack_resend")
        language = form.trimmed("lang").lowercased()
        let languages = form.all("tr_lang"), titles = form.all("tr_title"), descs = form.all("tr_desc"),
            messages = form.all("tr_message")
        func value(_ list: [String], _ index: Int) -> String {
            index < list.count ? list[index].trimmingCharacters(in: .whitespacesAndNewlines) : ""
        }
        translations = (0..<max(languages.count, titles.count, descs.count, messages.count)).map { index in
            Translation(
                language: value(languages, index).lowercased(), title: value(titles, index),
                desc: value(descs, index), message: value(messages, index))
        }.filter { !$0.isBlank }
        image = form.trimmed("image")
        let chosen = form.trimmed("kind")
        kind = chosen.isEmpty ? "general" : chosen
        ownKindName = form.trimmed("kind_own")
        // A checkbox after a hidden "false" of the same name: the last value is the box's (absent: the default).
        dismissible = form.all("dismissible").last.map { $0 != "false" } ?? true
        display = form.all("display").last.map { $0 != "false" } ?? true
        expiresAt = form.trimmed("expires_at")
        expiresLocal = form.trimmed("expires_local")
        sendAtLocal = form.trimmed("send_at_local")
        let keys = form.all("data_key"), values = form.all("data_value")
        data = (0..<max(keys.count, values.count))
            .map { (key: value(keys, $0), value: $0 < values.count ? values[$0] : "") }
            .filter { !$0.key.isEmpty || !$0.value.isEmpty }
    }

    /// What the fields read as: each HubCore reading's result, or its refusal beside the form's field.
    struct Reading {
        /// `Submission.urgency(named:)`'s reading.
        var urgency = Urgency.default
        /// `Submission.ack(from:)`'s reading.
        var ack: AckRequest?
        /// `MessageService.broadcast(from:)`'s reading.
        var broadcast = Broadcast()
        /// The data rows as the message's `data` (its rules are the send rules', `MessageData`).
        var data: [String: String] = [:]
        /// The refusals, by the form's field.
        var errors: [String: String] = [:]
    }

    /// Reads the fields through HubCore for a message that is an Alert (`alert`: the translations carry their
    /// notification text) or not.
    func read(with messages: MessageService, alert: Bool) -> Reading {
        var reading = Reading()
        /// `read()`'s value, or nil with its refusal noted beside `field` (the readings throw only `SendRefusal`).
        func value<T>(_ field: String, _ read: () throws -> T) -> T? {
            do {
                return try read()
            } catch {
                reading.errors[field] = (error as? SendRefusal)?.message ?? "This cannot be read."
                return nil
            }
        }
        reading.urgency =
            value("urgency") {
                try MessageService.Submission.urgency(named: urgency.isEmpty ? nil : urgency)
            } ?? .default
        reading.ack = value("ack") { try MessageService.Submission.ack(from: ackValue) } ?? nil
        // Each group of fields alone first, so that every field at fault shows its refusal; then all of them.
        let body = broadcastBody(alert: alert)
        for (field, keys) in [
            ("translations", ["lang", "translations"]), ("image", ["image"]),
            ("kind", ["kind", "dismissible"]), ("expires_at", ["expires_at"]),
            ("display", ["display"]),
        ] {
            let part = BSONDocument(body.elements.filter { keys.contains($0.key) })
            if !part.isEmpty { _ = value(field) { try messages.broadcast(from: part) } }
        }
        if reading.errors.isEmpty {
            reading.broadcast = value("translations") { try messages.broadcast(from: body) } ?? Broadcast()
        }
        var seen = Set<String>()
        for (key, value) in data {
            guard seen.insert(key).inserted else {
                reading.errors["data"] = "Each key once: “\(key)” is given twice."
                break
            }
            reading.data[key] = value
        }
        return reading
    }

    /// The `send_at` the form asks for (Unix ms; nil to send now): the typed time on the school's wall clock, held to
    /// POST /message's rule (from now to `MessageController.maximumScheduleMS` ahead; a time a minute past is sent
    /// now, as the API sends a past `send_at` at once); or the refusal for the form's `send_at` field.
    func sendAt(in school: SchoolTime, now: Int64) -> Result<Int64?, SendAtProblem> {
        guard !sendAtLocal.isEmpty else { return .success(nil) }
        guard let instant = school.instant(ofField: sendAtLocal) else {
            return .failure(SendAtProblem(text: "Enter a date and a time, such as 2027-03-01 08:00."))
        }
        if instant < now - 60_000 {
            return .failure(
                SendAtProblem(text: "This time has passed (\(school.text(instant))). Leave it empty to send now."))
        }
        if instant > now + MessageController.maximumScheduleMS {
            return .failure(SendAtProblem(text: "A message can be scheduled at most 90 days ahead."))
        }
        return .success(instant)
    }

    /// Why the send form's "send at" cannot be read: the sentence shown beside it.
    struct SendAtProblem: Error {
        var text: String
    }

    /// The `ack` value POST /message would carry: nil unless asked; the responses one a line, the minutes as
    /// `within_s` (whole minutes; anything else is passed on as typed, for the rule to refuse).
    var ackValue: BSONValue? {
        guard ackRequested else { return nil }
        var ack: [(key: String, value: BSONValue)] = []
        let responses = ackResponses.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if !responses.isEmpty { ack.append(("responses", .array(responses.map(BSONValue.string)))) }
        if !ackWithinMinutes.isEmpty {
            if let minutes = Int64(ackWithinMinutes),
                case let (seconds, overflow) = minutes.multipliedReportingOverflow(by: 60), !overflow
            {
                ack.append(("within_s", .int64(seconds)))
            } else {
                ack.append(("within_s", .string(ackWithinMinutes)))
            }
        }
        if !ackResend.isEmpty { ack.append(("resend", Int64(ackResend).map(BSONValue.int64) ?? .string(ackResend))) }
        return .document(BSONDocument(ack))
    }

    /// The presentation fields POST /message would carry, only those filled in (so a form left at its defaults
    /// stores a message as before): `lang`, `translations` (their `desc` only for an Alert), `image`, `kind`
    /// (not when general), `dismissible` and `display` (only when false), `expires_at`.
    func broadcastBody(alert: Bool) -> BSONDocument {
        var body: [(key: String, value: BSONValue)] = []
        if !language.isEmpty { body.append(("lang", .string(language))) }
        if !translations.isEmpty {
            body.append(
                (
                    "translations",
                    .document(
                        BSONDocument(
                            translations.map { row in
                                var text: [(key: String, value: BSONValue)] = [("title", .string(row.title))]
                                if alert { text.append(("desc", .string(row.desc))) }
                                text.append(("message", .string(row.message)))
                                return (row.language, .document(BSONDocument(text)))
                            }))
                ))
        }
        if !image.isEmpty { body.append(("image", .string(image))) }
        if kind == Self.ownKind {
            body.append(("kind", .string(ownKindName)))
        } else if kind != "general" {
            body.append(("kind", .string(kind)))
        }
        if !dismissible { body.append(("dismissible", false)) }
        if let expiry = expiryValue { body.append(("expires_at", .string(expiry))) }
        if !display { body.append(("display", false)) }
        return BSONDocument(body)
    }

    /// The expiry as RFC 3339: the script's (with the browser's offset), else the typed local time read as UTC.
    var expiryValue: String? {
        if !expiresAt.isEmpty { return expiresAt }
        guard !expiresLocal.isEmpty else { return nil }
        // `datetime-local` gives 2026-12-24T18:00 or 2026-12-24T18:00:30.
        let colons = expiresLocal.filter { $0 == ":" }.count
        return expiresLocal + (colons == 1 ? ":00Z" : "Z")
    }

    /// What the template shows: the values to refill and the choices of the selects.
    func templateData() -> [String: Any] {
        let chosenUrgency = urgency.isEmpty ? Urgency.default.rawValue : urgency
        var rows = translations.map { row -> [String: Any] in
            ["lang": row.language, "title": row.title, "desc": row.desc, "message": row.message]
        }
        // One empty row, so that a browser without the script can send one translation.
        if rows.isEmpty { rows = [["lang": "", "title": "", "desc": "", "message": ""]] }
        var dataRows = data.map { ["key": $0.key, "value": $0.value] }
        if dataRows.isEmpty { dataRows = [["key": "", "value": ""]] }
        let chosenKind = Self.offeredKinds.contains(kind) || kind == Self.ownKind ? kind : Self.ownKind
        return [
            "urgencies": Urgency.allCases.map { ["value": $0.rawValue, "selected": $0.rawValue == chosenUrgency] },
            "ack": ackRequested, "ackResponses": ackResponses, "ackWithinMinutes": ackWithinMinutes,
            "ackResend": ackResend, "lang": language, "translations": rows,
            "image": image,
            "kinds": (Self.offeredKinds + [Self.ownKind]).map { value -> [String: Any] in
                [
                    "value": value, "name": value == Self.ownKind ? "Our own…" : value.capitalized,
                    "selected": value == chosenKind,
                ]
            },
            "ownKind": chosenKind == Self.ownKind ? (kind == Self.ownKind ? ownKindName : kind) : ownKindName,
            "dismissible": dismissible, "display": display, "expiresLocal": expiresLocal, "data": dataRows,
            "sendAtLocal": sendAtLocal,
            "bounds": [
                "translations": MessageService.Submission.maximumTranslations,
                "imageBytes": MessageService.Submission.maximumImageBytes,
                "responses": MessageService.Submission.maximumResponses,
                "withinMinutes": MessageService.Submission.maximumWithinSeconds / 60,
                "resend": MessageService.Submission.maximumResend,
                "dataKeys": MessageData.maximumKeys,
            ] as [String: Any],
        ]
    }
}
