import DAO
import FakeFCM
import Foundation
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// Events against the real hub, its reminder worker and the fake FCM: a reminder reaches FCM at its time, an edit
/// moves the pending reminder, a deletion stops it, occurrences are listed in the event's zone, and what breaks the
/// rules is refused whole.
@Suite("Events: reminders sent at their time")
struct EventTests {
    typealias Handset = ReceiptTests.Handset

    /// A local date-time in UTC `seconds` from now, whole seconds rounded up, and its Unix ms.
    static func utcLocal(inSeconds seconds: Int64) -> (text: String, ms: Int64) {
        let ms = (UnixTime.nowMilliseconds() / 1000 + seconds + 1) * 1000
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        return (formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)), ms)
    }

    /// An event body to the chess group starting at `startsAt` (UTC) with `reminders`.
    static func body(_ title: String, startsAt: String, reminders: [String], extra: String = "") -> String {
        let leads = reminders.map { "\"\($0)\"" }.joined(separator: ", ")
        return #"""
            {"title": "\#(title)", "message": "Bring your boards.", "starts_at": "\#(startsAt)", "tz": "UTC",
             "location": "Room 12", "reminders": [\#(leads)], "to": {"groups": ["chess"]}\#(extra)}
            """#
    }

    /// What breaks RFC 5545's framing in `text`: lines not ended by CRLF, longer than 75 octets, components
    /// not closed in order, a TZID without its VTIMEZONE, a VEVENT without UID, DTSTAMP or DTSTART.
    static func calendarProblems(_ text: String) -> [String] {
        var problems: [String] = []
        guard text.hasSuffix("\r\n") else { return ["the file does not end with CRLF"] }
        let lines = text.dropLast().components(separatedBy: "\r\n")  // "\r\n" is one Character
        if lines.contains(where: { $0.contains("\n") || $0.contains("\r") }) { problems.append("a bare line break") }
        problems += lines.filter { $0.utf8.count > 75 }.map { "longer than 75 octets: \($0)" }
        // Unfolded: a line opened by a space continues the one before.
        var unfolded: [String] = []
        for line in lines {
            if line.hasPrefix(" "), !unfolded.isEmpty {
                unfolded[unfolded.count - 1] += line.dropFirst()
            } else {
                unfolded.append(line)
            }
        }
        var open: [String] = []
        var zones: Set<String> = []
        var used: Set<String> = []
        var event: Set<String> = []
        for line in unfolded {
            let name = String(line.prefix { $0 != ":" && $0 != ";" })
            if name == "BEGIN" { open.append(String(line.dropFirst(6))) }
            if name == "END" {
                if open.popLast() != String(line.dropFirst(4)) { problems.append("\(line) closes nothing open") }
            }
            if open == ["VCALENDAR", "VTIMEZONE"], name == "TZID" { zones.insert(String(line.dropFirst(5))) }
            if let range = line.range(of: "TZID="), name != "TZID" {
                used.insert(String(line[range.upperBound...].prefix { $0 != ":" && $0 != ";" }))
            }
            if open.last == "VEVENT" { event.insert(name) }
        }
        if !open.isEmpty { problems.append("not closed: \(open)") }
        if !used.isSubset(of: zones) { problems.append("TZID without VTIMEZONE: \(used.subtracting(zones))") }
        if !event.isSuperset(of: ["UID", "DTSTAMP", "DTSTART", "SUMMARY"]) { problems.append("VEVENT lacks \(event)") }
        return problems
    }

    /// The requests FCM got for event `id` on Ann's phone.
    static func reminders(of id: String, _ fake: FakeFCM) -> [[String: Any]] {
        AcknowledgementTests.requests(to: RoomTests.annPhone.token, fake).filter {
            ($0["data"] as? [String: String])?["event"] == id
        }
    }

    @Test func aReminderReachesFCMAtItsTimeAsOneMessageInHistory() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: RoomTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let start = Self.utcLocal(inSeconds: 5)
                let created = try await hub.request(
                    .post, "/event", as: .admin,
                    json: Self.body("Chess club", startsAt: start.text, reminders: ["PT3S"]))
                #expect(created.status == .created, "\(created.text)")
                let event = try created.json()
                let id = try #require(event["id"]?.stringValue)
                let due = start.ms - 3_000
                #expect(event["next_reminder_at"]?.int64Value == due)
                #expect(event["tz"] == "UTC" && event["reminders"] == ["PT3S"] && event["location"] == "Room 12")
                // Nothing before its time; then one request a device, within 2 s of it.
                #expect(Self.reminders(of: id, fake).isEmpty)
                var arrived: Int64 = 0
                try await eventually("the reminder reaches FCM", within: .seconds(20)) {
                    arrived = UnixTime.nowMilliseconds()
                    return !Self.reminders(of: id, fake).isEmpty
                }
                #expect(arrived >= due && arrived - due <= 2_000, "arrived \(arrived - due) ms after its time")
                print("event reminder: reached FCM \(arrived - due) ms after its time")
                let reminder = try #require(Self.reminders(of: id, fake).first)
                let data = try #require(reminder["data"] as? [String: String])
                #expect(data["reminder"] == "PT3S" && data["starts_at"] == String(start.ms) && data["tz"] == "UTC")
                let body = (reminder["notification"] as? [String: Any])?["body"] as? String
                #expect(body?.contains("Room 12") == true, "\(body ?? "")")
                // Once: the worker's next claims send it again to nobody; the event has no reminder to come.
                try await Task.sleep(for: .seconds(2))
                #expect(Self.reminders(of: id, fake).count == 1)
                #expect(AcknowledgementTests.requests(to: RoomTests.benPhone.token, fake).count == 1)
                let after = try await hub.request(.get, "/event/\(id)", as: .admin).json()
                #expect(after["next_reminder_at"] == .null && after["last_error"] == .null)
                let stored = try await hub.database.collection(CollectionName.message).countDocuments(
                    ["data.event": .string(id)])
                #expect(stored == 1)
            }
        }
    }

    @Test func anEditMovesThePendingReminderAndADeletionStopsIt() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: RoomTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let start = Self.utcLocal(inSeconds: 6)
                let created = try await hub.request(
                    .post, "/event", as: .admin, json: Self.body("Exam", startsAt: start.text, reminders: ["PT4S"]))
                let id = try #require(try created.json()["id"]?.stringValue)
                // Moved an hour later before its reminder: the reminder moves with it.
                let later = Self.utcLocal(inSeconds: 3_600)
                let moved = try await hub.request(
                    .put, "/event/\(id)", as: .admin, json: Self.body("Exam", startsAt: later.text, reminders: ["PT4S"])
                )
                #expect(moved.status == .ok, "\(moved.text)")
                #expect(try moved.json()["next_reminder_at"]?.int64Value == later.ms - 4_000)
                #expect(try moved.json()["version"]?.int64Value == 2)
                try await Task.sleep(for: .milliseconds(Int(start.ms - UnixTime.nowMilliseconds() + 1_500)))
                #expect(Self.reminders(of: id, fake).isEmpty)
                // Deleted: nothing more of it is sent, and it is gone.
                #expect(try await hub.request(.delete, "/event/\(id)", as: .admin).status == .noContent)
                let gone = try await hub.request(.get, "/event/\(id)", as: .admin)
                #expect(gone.status == .notFound && gone.errorCode == "event_not_found")
                #expect(try await hub.request(.delete, "/event/\(id)", as: .admin).status == .notFound)
            }
        }
    }

    @Test func aWeeklySeriesKeepsItsLocalTimeAcrossTheClockChange() async throws {
        try await HubHarness.with(seed: RoomTests.seed) { hub in
            let created = try await hub.request(
                .post, "/event", as: .admin,
                json: #"""
                    {"title": "Assembly", "message": "In the hall.", "starts_at": "2027-03-01T08:00",
                     "tz": "Europe/Berlin", "recurrence": "FREQ=WEEKLY;BYDAY=MO;COUNT=10", "exdates": ["2027-03-15"],
                     "reminders": ["PT30M"], "to": {"groups": ["chess"]}}
                    """#)
            #expect(created.status == .created, "\(created.text)")
            let id = try #require(try created.json()["id"]?.stringValue)
            let listed = try await hub.request(
                .get, "/event/\(id)/occurrences?from=2027-03-08T00:00:00Z&to=2027-04-06T00:00:00Z", as: .admin
            ).json()
            let entries = listed["occurrences"]?.arrayValue ?? []
            let occurrences = entries.compactMap(\.documentValue)
            #expect(
                occurrences.map { $0["date"]?.stringValue } == ["2027-03-08", "2027-03-22", "2027-03-29", "2027-04-05"])
            #expect(
                occurrences.map { $0[path: "start.utc"]?.stringValue } == [
                    "2027-03-08T07:00:00Z", "2027-03-22T07:00:00Z", "2027-03-29T06:00:00Z", "2027-04-05T06:00:00Z",
                ])
            #expect(occurrences.allSatisfy { $0[path: "start.local"]?.stringValue?.hasSuffix("T08:00:00") == true })
            #expect(occurrences.first?["reminders"]?.arrayValue?.first?.documentValue?["utc"] == "2027-03-08T06:30:00Z")
            // Its calendar file in Berlin's time, with the zone's changes.
            let calendar = String(buffer: try await hub.request(.get, "/event/\(id).ics", as: .admin).body)
            #expect(Self.calendarProblems(calendar).isEmpty, "\(Self.calendarProblems(calendar))")
            #expect(calendar.contains("DTSTART;TZID=Europe/Berlin:20270301T080000\r\n"))
            #expect(
                calendar.contains("BEGIN:DAYLIGHT\r\nDTSTART:20270328T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200")
            )
            if let path = ProcessInfo.processInfo.environment["EVENT_ICS_OUT"] {
                try calendar.write(toFile: path + ".berlin", atomically: true, encoding: .utf8)
            }
            // Every event's occurrences in a range, by start.
            let all = try await hub.request(
                .get, "/event?from=2027-03-28T00:00:00Z&to=2027-03-30T00:00:00Z", as: .communicator
            ).json()
            #expect(all["occurrences"]?.arrayValue?.count == 1)
            #expect(all["occurrences"]?.arrayValue?.first?.documentValue?["event"] == .string(id))
        }
    }

    @Test func whatBreaksTheRulesIsRefusedWholeAndStoresNothing() async throws {
        try await HubHarness.with(seed: RoomTests.seed) { hub in
            let start = Self.utcLocal(inSeconds: 600).text
            let cases: [(String, String, Int, String)] = [
                (
                    "a zone that is none",
                    Self.body("x", startsAt: start, reminders: []).replacingOccurrences(
                        of: "\"UTC\"", with: "\"Mars/Olympus\""), 422, "invalid_schedule"
                ),
                (
                    "a start with an offset", Self.body("x", startsAt: start + "Z", reminders: []), 422,
                    "invalid_schedule"
                ),
                (
                    "six reminders",
                    Self.body("x", startsAt: start, reminders: ["PT1M", "PT2M", "PT3M", "PT4M", "PT5M", "PT6M"]),
                    422, "invalid_field"
                ),
                ("a lead in months", Self.body("x", startsAt: start, reminders: ["P1M"]), 422, "invalid_schedule"),
                (
                    "a yearly rule",
                    Self.body("x", startsAt: start, reminders: [], extra: #", "recurrence": "FREQ=YEARLY""#),
                    422, "invalid_schedule"
                ),
                (
                    "a send time", Self.body("x", startsAt: start, reminders: [], extra: #", "send_at": 1"#), 422,
                    "invalid_field"
                ),
                (
                    "a group that is none",
                    Self.body("x", startsAt: start, reminders: []).replacingOccurrences(
                        of: "chess", with: "nowhere"), 404, "group_not_found"
                ),
            ]
            for (what, json, status, code) in cases {
                let response = try await hub.request(.post, "/event", as: .admin, json: json)
                #expect(response.status.code == status, "\(what): \(response.text)")
                #expect(response.errorCode == code, "\(what): \(response.text)")
            }
            #expect(
                try await hub.request(.post, "/event", json: Self.body("x", startsAt: start, reminders: [])).status
                    == .unauthorized)
            #expect(try await hub.database.collection(CollectionName.events).countDocuments() == 0)
            #expect(try await hub.request(.get, "/event/not-an-id", as: .admin).status == .badRequest)
        }
    }
}

extension EventTests {
    @Test func aRotaNightReachesExactlyItsPersonsEachNamingThePartner() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: RoomTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let start = Self.utcLocal(inSeconds: 5)
                let created = try await hub.request(
                    .post, "/event", as: .admin,
                    json: #"""
                        {"title": "On call", "message": "You are on call tonight with {partners}.",
                         "starts_at": "\#(start.text)", "tz": "UTC", "recurrence": "FREQ=DAILY;COUNT=3",
                         "reminders": ["PT3S"], "to": {"groups": ["notices"]}}
                        """#)
                #expect(created.status == .created, "\(created.text)")
                let id = try #require(try created.json()["id"]?.stringValue)
                let tonight = String(start.text.prefix(10))
                let assigned = try await hub.request(
                    .put, "/event/\(id)/occurrences/\(tonight)", as: .admin,
                    json: #"{"to": {"persons": ["ann", "ben"]}}"#)
                #expect(assigned.status == .ok, "\(assigned.text)")
                #expect(try assigned.json()[path: "rota.\(tonight)"] == ["ann", "ben"])
                try await eventually("both advisors are told", within: .seconds(20)) {
                    !Self.reminders(of: id, fake).isEmpty
                        && AcknowledgementTests.requests(to: RoomTests.benPhone.token, fake).contains {
                            ($0["data"] as? [String: String])?["event"] == id
                        }
                }
                try await Task.sleep(for: .seconds(1))
                func texts(_ token: String) -> [String] {
                    AcknowledgementTests.requests(to: token, fake).compactMap {
                        ($0["data"] as? [String: String])?["event"] == id
                            ? ($0["data"] as? [String: String])?["rota"] : nil
                    }
                }
                // One reminder each (the pop-up and the data of one message), each naming the other.
                let annMessages = try await hub.database.collection(CollectionName.message).find(
                    ["data.event": .string(id), "to.persons": "ann"])
                let benMessages = try await hub.database.collection(CollectionName.message).find(
                    ["data.event": .string(id), "to.persons": "ben"])
                #expect(annMessages.count == 1 && benMessages.count == 1)
                #expect(annMessages.first?["message"]?.stringValue?.hasSuffix("on call tonight with ben.") == true)
                #expect(benMessages.first?["message"]?.stringValue?.hasSuffix("on call tonight with ann.") == true)
                #expect(texts(RoomTests.annPhone.token).allSatisfy { $0 == "ann,ben" })
                #expect(
                    try await hub.database.collection(CollectionName.message).countDocuments(["data.event": .string(id)]
                    ) == 2)
                // A date the series does not have, and one that is not a date.
                let none = try await hub.request(
                    .put, "/event/\(id)/occurrences/2020-01-01", as: .admin, json: #"{"to": {"persons": ["ann"]}}"#)
                #expect(none.status == .notFound && none.errorCode == "occurrence_not_found")
                let bad = try await hub.request(
                    .put, "/event/\(id)/occurrences/tonight", as: .admin, json: #"{"to": {"persons": ["ann"]}}"#)
                #expect(bad.status == .badRequest)
            }
        }
    }

    @Test func cancellingAnOccurrenceOfAnAnnouncedSeriesStopsItsRemindersAndCorrectsTheAnnouncement() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: RoomTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let start = Self.utcLocal(inSeconds: 3_600)
                let created = try await hub.request(
                    .post, "/event", as: .admin,
                    json: Self.body(
                        "Revision class", startsAt: start.text, reminders: ["PT10M"],
                        extra: #", "recurrence": "FREQ=DAILY;COUNT=3", "announce": true"#))
                #expect(created.status == .created, "\(created.text)")
                let event = try created.json()
                let id = try #require(event["id"]?.stringValue)
                let announcement = try #require(event["announcement"]?.stringValue)
                let key = try #require(ObjectID(hex: announcement))
                try await FanOutTests.waitUntilSent(
                    try await MessageDAO(database: hub.database).get(msiKey: key), in: hub.database)
                let sent = try #require(AcknowledgementTests.requests(to: RoomTests.annPhone.token, fake).first)
                #expect((sent["data"] as? [String: String])?["ics"] == "/event/\(id).ics")
                // The first night is cancelled: its reminder moves on to the second night's.
                let first = String(start.text.prefix(10))
                let cancelled = try await hub.request(.delete, "/event/\(id)/occurrences/\(first)", as: .admin)
                #expect(cancelled.status == .ok, "\(cancelled.text)")
                #expect(try cancelled.json()["exdates"] == [.string(first)])
                #expect(try cancelled.json()["next_reminder_at"]?.int64Value == start.ms + 86_400_000 - 600_000)
                let corrected = try await MessageDAO(database: hub.database).get(msiKey: key)
                #expect(corrected.document["desc"]?.stringValue?.hasPrefix("Cancelled: ") == true)
                let again = try await hub.request(.delete, "/event/\(id)/occurrences/\(first)", as: .admin)
                #expect(again.status == .notFound && again.errorCode == "occurrence_not_found")
                // The calendar file has the series and its exception.
                let calendar = try await hub.request(.get, "/event/\(id).ics", as: .admin)
                #expect(calendar.status == .ok)
                #expect(calendar.headers[.contentType] == "text/calendar; charset=utf-8")
                let text = String(buffer: calendar.body)
                #expect(text.contains("RRULE:FREQ=DAILY;COUNT=3\r\n") && text.contains("EXDATE;TZID=UTC:"))
                #expect(text.hasPrefix("BEGIN:VCALENDAR\r\n") && text.hasSuffix("END:VCALENDAR\r\n"))
                #expect(Self.calendarProblems(text).isEmpty, "\(Self.calendarProblems(text))")
                if let path = ProcessInfo.processInfo.environment["EVENT_ICS_OUT"] {
                    try text.write(toFile: path, atomically: true, encoding: .utf8)
                }
                // A device of the audience reads it with its secret; one outside it does not.
                let byDevice = try await hub.request(.get, "/event/\(id).ics", as: .token(RoomTests.annPhone.secret))
                #expect(byDevice.status == .ok)
                let outsider = try await hub.request(.get, "/event/\(id).ics", as: .token(RoomTests.cidPhone.secret))
                #expect(outsider.status == .notFound)
            }
        }
    }
}

extension EventTests {
    @Test func twoReplicasSendEachReminderOnceAndTheOneThatMadeTheEventNeedNotBeTheOneThatSendsIt() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: RoomTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                // A second replica's reminder worker on the same database, beside the hub's own.
                let replica = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
                let compose = EventController(services: replica).compose
                let worker = Task { await replica.events.reminderLoop(compose: compose) }
                defer { worker.cancel() }
                // Five events, two reminders each, all due within four seconds.
                var ids: [String] = []
                for number in 0..<5 {
                    let start = Self.utcLocal(inSeconds: 4 + Int64(number % 2))
                    let created = try await hub.request(
                        .post, "/event", as: .admin,
                        json: Self.body("Meeting \(number)", startsAt: start.text, reminders: ["PT3S", "PT2S"]))
                    ids.append(try #require(try created.json()["id"]?.stringValue))
                }
                try await eventually("every reminder reaches both phones", within: .seconds(30)) {
                    ids.allSatisfy { Self.reminders(of: $0, fake).count >= 2 }
                }
                try await Task.sleep(for: .seconds(2))
                for id in ids {
                    #expect(Self.reminders(of: id, fake).count == 2, "event \(id)")
                    let leads = Self.reminders(of: id, fake).compactMap {
                        ($0["data"] as? [String: String])?["reminder"]
                    }
                    #expect(Set(leads) == ["PT3S", "PT2S"])
                }
                #expect(
                    try await hub.database.collection(CollectionName.message).countDocuments(
                        ["data.event": ["$exists": true]]) == 10)
            }
        }
    }
}

extension EventTests {
    @Test func aRecurringMessageSendsEachOccurrenceAsItselfUntilItsSeriesIsDeleted() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: RoomTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let start = Self.utcLocal(inSeconds: 2)
                let posted = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Lab", "desc": "Closed on Friday", "message": "The lab is closed on Friday.",
                         "distribution": "Alert", "to": {"groups": ["chess"]}, "recurrence": "FREQ=WEEKLY;COUNT=4",
                         "tz": "UTC", "starts_at": "\#(start.text)"}
                        """#)
                #expect(posted.status == .created, "\(posted.text)")
                let series = try #require(try posted.json()["series"]?.stringValue)
                #expect(try posted.json()["next_reminder_at"]?.int64Value == start.ms)
                try await eventually("the first occurrence is sent", within: .seconds(20)) {
                    AcknowledgementTests.requests(to: RoomTests.annPhone.token, fake).contains {
                        ($0["data"] as? [String: String])?["series"] == series
                    }
                }
                let stored = try await hub.database.collection(CollectionName.message).find(
                    ["data.series": .string(series)])
                #expect(stored.count == 1)
                // Sent as itself: no reminder's "Starts ..." before its text.
                #expect(
                    stored.first?["message"] == "The lab is closed on Friday."
                        && stored.first?["desc"] == "Closed on Friday")
                #expect(
                    try await hub.request(.get, "/event/\(series)", as: .admin).json()["next_reminder_at"]?.int64Value
                        == start.ms + 7 * 86_400_000)
                #expect(try await hub.request(.delete, "/event/\(series)", as: .admin).status == .noContent)
                // Without a first time it is refused, and nothing is stored.
                let refused = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Lab", "desc": "Closed", "message": "Closed.", "distribution": "Alert",
                         "to": {"groups": ["chess"]}, "recurrence": "FREQ=DAILY", "tz": "UTC"}
                        """#)
                #expect(refused.status == .unprocessableContent && refused.errorCode == "missing_field")
                #expect(try await hub.database.collection(CollectionName.events).countDocuments() == 0)
            }
        }
    }
}
