import Foundation

/// The event a message announces or reminds of, read from the fields the hub puts in its data (`event`, `occurrence`,
/// `starts_at`, `starts_local`, `tz`, `reminder`, `location`, `ics`), or the recurring notice it is an occurrence of
/// (`series`, `occurrence`): what an app needs to show "starts in 30 minutes", open the event, or save it to the
/// device's calendar (`MSIClient.calendarFile(for:)`) without reading the text.
public struct EventReference: Sendable, Hashable {
    /// The event's id on the hub (24 hex digits); for a recurring notice, its series'.
    public var eventID: String
    /// Whether the message is an occurrence of a recurring notice (`POST /message` with a recurrence), not about an
    /// event with reminders.
    public var isRecurringNotice: Bool
    /// The occurrence's date on the event's wall clock ("2027-03-09"), when the message is about one.
    public var occurrence: String?
    /// When the occurrence starts.
    public var startsAt: Date?
    /// The start as the event's wall clock reads it ("2027-03-09T08:00:00").
    public var startsLocal: String?
    /// The event's zone.
    public var timeZone: TimeZone?
    /// The lead of the reminder this message is, as ISO 8601 ("PT30M"); nil for an announcement.
    public var reminder: String?
    /// Where it takes place, when the sender said.
    public var location: String?
    /// The path of the event's calendar file on the hub ("/event/<id>.ics"), for events.
    public var calendarPath: String?

    /// The event or series that `data` names, or nil when it names none (or not as 24 hex digits).
    public init?(data: [String: String]) {
        let notice = data["event"] == nil
        guard let id = data["event"] ?? data["series"], id.utf8.count == 24, id.allSatisfy(\.isHexDigit) else {
            return nil
        }
        self.eventID = id
        self.isRecurringNotice = notice
        self.occurrence = data["occurrence"]
        self.startsAt = data["starts_at"].flatMap(Int64.init).map { Date(timeIntervalSince1970: Double($0) / 1000) }
        self.startsLocal = data["starts_local"]
        self.timeZone = data["tz"].flatMap(TimeZone.init(identifier:))
        self.reminder = data["reminder"]
        self.location = data["location"]
        self.calendarPath = notice ? nil : data["ics"] ?? "/event/\(id).ics"
    }
}

extension Message {
    /// The event this message announces or reminds of, or the recurring notice it is an occurrence of; nil for any
    /// other message.
    public var event: EventReference? { EventReference(data: data) }
}
