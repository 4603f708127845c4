import DAO
import Foundation
import HubCore
import HubModel
import HubTime
import Mongo

/// The event form of the portal as filled in, and the `POST /event` body it stands for: the body is read by
/// `EventController.draft` and held to the rules by `EventService`, as the API's is, so no rule has a second copy
/// here; only the form's own shape is read here (an audience chosen by radio button, reminders as ticked leads,
/// a repeat chosen from a list).
struct EventForm {
    /// The leads the form offers as boxes to tick, with their words; others are typed as ISO 8601 durations.
    static let offeredLeads: [(lead: String, name: String)] = [
        ("P7D", "1 week before"), ("P1D", "1 day before"), ("PT2H", "2 hours before"), ("PT1H", "1 hour before"),
        ("PT30M", "30 minutes before"), ("PT15M", "15 minutes before"), ("PT0S", "At the start"),
    ]
    /// The repeats the form offers: none, a rule of one frequency on the start's weekday or day of the month, or a
    /// rule typed in (an RRULE value).
    static let repeats: [(value: String, name: String)] = [
        ("none", "Does not repeat"), ("DAILY", "Every day"), ("WEEKLY", "Every week, on the same weekday"),
        ("MONTHLY", "Every month, on the same day"), ("custom", "A rule of our own (RRULE)"),
    ]

    var kind = SendRecipients.Kind.subject
    /// An audience the form cannot show (several groups, groups and persons, persons left out: set through the API),
    /// kept as it is when the form says so (`to` = `fixed`).
    var fixedAudience: BSONDocument?
    /// The subject's topic key, the group's id, the person ids as typed.
    var topicKey = "", group = "", persons = ""
    var title = "", message = "", location = ""
    /// `datetime-local` values on the event's zone's wall clock.
    var startsAt = "", endsAt = ""
    var timeZone = ""
    var leads: Set<String> = ["PT30M"]
    /// Further leads, typed as ISO 8601 durations separated by commas or spaces.
    var otherLeads = ""
    var repeatKind = "none"
    /// The last date of a repeat (`YYYY-MM-DD`), optional; or the rule typed for a custom repeat.
    var until = "", rule = ""
    var announce = false

    init(timeZone: String) {
        self.timeZone = timeZone
    }

    /// The fields of a posted form.
    init(form: PortalForm) {
        kind = SendRecipients.Kind(rawValue: form.trimmed("to")) ?? .subject
        topicKey = form.trimmed("topic_key")
        group = form.trimmed("group")
        persons = form.trimmed("persons")
        title = form.trimmed("title")
        message = form.trimmed("message")
        location = form.trimmed("location")
        startsAt = form.trimmed("starts_at")
        endsAt = form.trimmed("ends_at")
        timeZone = form.trimmed("tz")
        leads = Set(form.all("lead"))
        otherLeads = form.trimmed("other_leads")
        repeatKind = form.trimmed("repeat").isEmpty ? "none" : form.trimmed("repeat")
        until = form.trimmed("until")
        rule = form.trimmed("rule")
        announce = form["announce"] != nil
    }

    /// The form filled from a stored event, to edit it.
    init(event: Event) {
        if let fixed = Self.fixedAudience(of: event) {
            fixedAudience = fixed
        } else if let to = event.template["to"]?.documentValue {
            let groups = to["groups"]?.arrayValue?.compactMap(\.stringValue) ?? []
            if let first = groups.first {
                kind = .group
                group = first
            } else {
                kind = .persons
                persons = (to["persons"]?.arrayValue?.compactMap(\.stringValue) ?? []).joined(separator: ", ")
            }
        } else {
            kind = .subject
            topicKey = event.template["topic_key"]?.stringValue ?? ""
        }
        title = event.template["title"]?.stringValue ?? ""
        message = event.template["message"]?.stringValue ?? ""
        location = event.location ?? ""
        startsAt = String(event.schedule.startsAt.prefix(16))
        endsAt = event.schedule.endsAt.map { String($0.prefix(16)) } ?? ""
        timeZone = event.schedule.timeZone
        let offered = Set(Self.offeredLeads.map(\.lead))
        leads = Set(event.schedule.reminders.filter(offered.contains))
        otherLeads = event.schedule.reminders.filter { !offered.contains($0) }.joined(separator: ", ")
        if let recurrence = event.schedule.recurrence {
            repeatKind = "custom"
            rule = recurrence
        }
    }

    /// The event's audience when the form cannot show it: more than one group, groups and persons, or persons left
    /// out; nil when it can.
    static func fixedAudience(of event: Event) -> BSONDocument? {
        guard let to = event.template["to"]?.documentValue else { return nil }
        let groups = to["groups"]?.arrayValue?.count ?? 0, persons = to["persons"]?.arrayValue?.count ?? 0
        let excepted = to[path: "except.persons"]?.arrayValue?.isEmpty == false
        return groups > 1 || (groups > 0 && persons > 0) || excepted ? to : nil
    }

    /// The fields of an event's message the form sets; an edit keeps the others as they are (urgency, an
    /// acknowledgement asked, data, translations and the rest that `POST /event` takes).
    static let formFields: Set<String> = ["title", "message", "desc", "distribution", "topic_key", "to"]

    /// The reminders' leads: the boxes ticked in the form's order, then those typed.
    var reminders: [String] {
        Self.offeredLeads.map(\.lead).filter(leads.contains)
            + otherLeads.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
    }

    /// The RRULE value of the repeat chosen, nil for none.
    var recurrence: String? {
        switch repeatKind {
        case "none": return nil
        case "custom": return rule
        default:
            // `UNTIL` as a local date: the last day an occurrence may fall on.
            let last = LocalDate(parsing: until).map {
                ";UNTIL=" + $0.description.replacingOccurrences(of: "-", with: "")
            }
            return "FREQ=\(repeatKind)" + (last ?? "")
        }
    }

    /// What the form cannot say in the body (it is the form's own shape): a sentence beside its field.
    var problems: [String: String] {
        var problems: [String: String] = [:]
        if title.isEmpty { problems["title"] = "Enter a title." }
        if message.isEmpty { problems["message"] = "Enter the message." }
        if startsAt.isEmpty { problems["starts_at"] = "Enter when it starts." }
        if repeatKind != "none", repeatKind != "custom", !until.isEmpty, LocalDate(parsing: until) == nil {
            problems["repeat"] = "Enter the last date as a date, such as 2027-07-15."
        }
        if repeatKind == "custom", rule.isEmpty { problems["repeat"] = "Enter the rule, such as FREQ=WEEKLY;BYDAY=MO." }
        if !Self.repeats.contains(where: { $0.value == repeatKind }) { problems["repeat"] = "Choose how it repeats." }
        if reminders.isEmpty && !announce {
            problems["reminders"] = "Choose at least one reminder, or announce the event now."
        }
        return problems
    }

    /// The `POST /event` body the form stands for. `distribution`: the subject's for a subject (the send rules
    /// refuse another), an Alert for a group or persons (a reminder is a notification).
    /// `keeping`: the message fields of the event edited, those the form does not set kept as they are.
    func body(distribution: Distribution, keeping template: BSONDocument = [:]) -> BSONDocument {
        var body = BSONDocument(template.elements.filter { !Self.formFields.contains($0.key) })
        body["title"] = .string(title)
        body["message"] = .string(message)
        if let fixedAudience {
            body["to"] = .document(fixedAudience)
        } else {
            switch kind {
            case .subject:
                body["topic_key"] = .string(topicKey)
            case .group:
                body["to"] = ["groups": [.string(group)]]
            case .persons:
                body["to"] = ["persons": .array(SendRecipients.personIDs(persons).map(BSONValue.string))]
            }
        }
        body["distribution"] = .string(distribution.rawValue)
        if distribution == .information { body["desc"] = "" }
        body["starts_at"] = .string(startsAt)
        if !endsAt.isEmpty { body["ends_at"] = .string(endsAt) }
        body["tz"] = .string(timeZone)
        if !location.isEmpty { body["location"] = .string(location) }
        body["reminders"] = .array(reminders.map(BSONValue.string))
        if let recurrence { body["recurrence"] = .string(recurrence) }
        if announce { body["announce"] = true }
        return body
    }

    /// What the template shows: the values to refill and the choices.
    func templateData() -> [String: Any] {
        [
            "kind": [
                "subject": kind == .subject && fixedAudience == nil, "group": kind == .group && fixedAudience == nil,
                "persons": kind == .persons && fixedAudience == nil,
            ],
            "hasFixedAudience": fixedAudience != nil,
            "topicKey": topicKey, "group": group, "persons": persons, "title": title, "message": message,
            "location": location, "startsAt": startsAt, "endsAt": endsAt, "tz": timeZone,
            "leads": Self.offeredLeads.map { ["value": $0.lead, "name": $0.name, "checked": leads.contains($0.lead)] },
            "otherLeads": otherLeads,
            "repeats": Self.repeats.map { ["value": $0.value, "name": $0.name, "selected": $0.value == repeatKind] },
            "until": until, "rule": rule, "announce": announce,
        ]
    }
}
