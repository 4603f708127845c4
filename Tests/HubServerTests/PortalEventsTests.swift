import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import HubTime
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The portal schedules: the send form's "send at" read on the school's wall clock (`SCHOOL_TIME_ZONE`), and the
/// events pages (create, the occurrences, cancel one or all, edit, a rota's grid), each through `EventService` as the
/// API's `/event` is, with the user's rights.
@Suite struct PortalEventsTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!
    static let portal = PortalConfiguration(schoolTimeZone: berlin)

    /// The send form's `datetime-local` value of a time `days` ahead at `hour`:00 in Berlin, and its instant.
    static func berlinTime(daysAhead days: Int, hour: Int) -> (field: String, instant: Int64) {
        let today = LocalDateTime(instant: UnixTime.nowMilliseconds(), in: berlin).date
        let local = LocalDateTime(date: today.adding(days: days), hour: hour, minute: 0)!
        return (String(local.description.prefix(16)), local.instant(in: berlin))
    }

    @Test func sendAtIsReadOnTheSchoolsWallClockAndAPastTimeIsRefusedBesideItsField() async throws {
        try await HubHarness.with(seed: PortalRecipientsTests.seed, portal: Self.portal) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let form = try await browser.get("/portal/send")
            #expect(form.text.contains("id=\"send-at\"") && form.text.contains("the school's time, Europe/Berlin"))
            let csrf = try PortalBrowser.csrf(in: form)
            let later = Self.berlinTime(daysAhead: 3, hour: 9)
            let sent = try await browser.post(
                "/portal/send",
                PortalRecipientsTests.form(
                    csrf: csrf, to: "group", ["group": "class-7b", "send_at_local": later.field]))
            #expect(sent.status == .seeOther)
            let messages = hub.database.collection(CollectionName.message)
            let stored = try #require(try await messages.findOne([:]))
            #expect(stored[path: "relay.send_at"]?.int64Value == later.instant)
            let page = try await browser.get(try #require(sent.headers[.location]))
            #expect(
                page.text.contains("Scheduled for")
                    && page.text.contains(
                        later.field.replacingOccurrences(
                            of: "T", with: " ") + " (Europe/Berlin)")
            )
            // A time two days ago, and one 100 days ahead: refused beside the field, nothing stored.
            for (typed, words) in [
                (Self.berlinTime(daysAhead: -2, hour: 9).field, "This time has passed"),
                (Self.berlinTime(daysAhead: 100, hour: 9).field, "at most 90 days ahead"), ("tomorrow", "Enter a date"),
            ] {
                let refused = try await browser.post(
                    "/portal/send",
                    PortalRecipientsTests.form(csrf: csrf, to: "group", ["group": "class-7b", "send_at_local": typed]))
                #expect(refused.status == .unprocessableContent)
                #expect(refused.text.contains("id=\"send-at-error\"") && refused.text.contains(words))
            }
            #expect(try await messages.countDocuments([:]) == 1)
        }
    }

    /// Posts the event form with `fields` over a weekly chess-club event starting in two days at 18:00 in Berlin.
    static func eventForm(csrf: String, _ fields: [(String, String)] = []) -> [(String, String)] {
        let start = berlinTime(daysAhead: 2, hour: 18)
        var pairs: [(String, String)] = [
            ("_csrf", csrf), ("to", "group"), ("group", "chess"), ("title", "Chess club"),
            ("message", "Bring your boards."), ("starts_at", start.field), ("tz", "Europe/Berlin"),
            ("repeat", "WEEKLY"), ("lead", "P1D"), ("lead", "PT30M"), ("location", "Room 12"),
        ]
        for (name, value) in fields {
            pairs.removeAll { $0.0 == name }
            pairs.append((name, value))
        }
        return pairs
    }

    @Test func anEventMadeInThePortalIsTheAPIsEventAndItsOccurrencesAreCancelledEditedAndDeletedThere() async throws {
        try await HubHarness.with(seed: PortalRecipientsTests.seed, portal: Self.portal) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("dan", PortalRecipientsTests.danPassword)
            let menu = try await browser.get("/portal")
            #expect(menu.text.contains("href=\"/portal/events\""))
            let newForm = try await browser.get("/portal/events/new")
            #expect(newForm.status == .ok && newForm.text.contains("value=\"Europe/Berlin\""))
            let csrf = try PortalBrowser.csrf(in: newForm)
            let made = try await browser.post("/portal/events", pairs: Self.eventForm(csrf: csrf))
            #expect(made.status == .seeOther)
            let location = try #require(made.headers[.location])
            #expect(location.hasSuffix("?done=created"))
            let path = String(location.prefix(while: { $0 != "?" }))
            let id = String(path.dropFirst("/portal/events/".count))
            // The API's event: the same schedule, the audience, the reminders, sent as dan.
            let api = try await hub.request(.get, "/event/\(id)", as: .admin).json()
            let start = Self.berlinTime(daysAhead: 2, hour: 18)
            #expect(api["starts_at"]?.stringValue == start.field + ":00")
            #expect(api["tz"]?.stringValue == "Europe/Berlin" && api["recurrence"]?.stringValue == "FREQ=WEEKLY")
            #expect(api["reminders"]?.arrayValue?.compactMap(\.stringValue) == ["P1D", "PT30M"])
            #expect(api[path: "to.groups"]?.arrayValue?.compactMap(\.stringValue) == ["chess"])
            #expect(api["created_by"]?.stringValue == "dan" && api["location"]?.stringValue == "Room 12")
            // Its page and the list show the occurrences on the Berlin wall clock.
            let page = try await browser.get(path)
            #expect(page.text.contains("Room 12") && page.text.contains("1 day before, 30 minutes before"))
            let firstDate = String(start.field.prefix(10))
            #expect(page.text.contains("\(firstDate) 18:00 (Europe/Berlin)"))
            let list = try await browser.get("/portal/events")
            #expect(list.text.contains("Chess club") && list.text.contains("data-date=\"\(firstDate)\""))
            // Cancelling the first occurrence: an exception, in the API too.
            let cancelled = try await browser.post(path + "/occurrences/\(firstDate)/cancel", ["_csrf": csrf])
            #expect(cancelled.status == .seeOther)
            let afterCancel = try await hub.request(.get, "/event/\(id)", as: .admin).json()
            #expect(afterCancel["exdates"]?.arrayValue?.compactMap(\.stringValue) == [firstDate])
            // Editing: the form comes filled; a new hour moves the pending reminders.
            let edit = try await browser.get(path + "/edit")
            #expect(edit.text.contains("value=\"Chess club\"") && edit.text.contains("FREQ=WEEKLY"))
            let moved = Self.berlinTime(daysAhead: 2, hour: 19)
            let edited = try await browser.post(
                path, pairs: Self.eventForm(csrf: csrf, [("starts_at", moved.field), ("title", "Chess club (late)")]))
            #expect(edited.status == .seeOther)
            let afterEdit = try await hub.request(.get, "/event/\(id)", as: .admin).json()
            #expect(afterEdit["starts_at"]?.stringValue == moved.field + ":00")
            #expect(afterEdit["title"]?.stringValue == "Chess club (late)")
            // Deleting: gone from the API.
            let deleted = try await browser.post(path + "/delete", ["_csrf": csrf])
            #expect(deleted.status == .seeOther && deleted.headers[.location] == "/portal/events?done=deleted")
            #expect(try await hub.request(.get, "/event/\(id)", as: .admin).status == .notFound)
        }
    }

    @Test func aFormTheRulesRefuseShowsWhyAndStoresNothing() async throws {
        try await HubHarness.with(seed: PortalRecipientsTests.seed, portal: Self.portal) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let csrf = try PortalBrowser.csrf(in: try await browser.get("/portal/events/new"))
            // A zone that is not one, a group ann may not send to, no reminder: each refused with its reason.
            let badZone = try await browser.post(
                "/portal/events", pairs: Self.eventForm(csrf: csrf, [("group", "class-7b"), ("tz", "Mars/Olympus")]))
            #expect(badZone.status == .unprocessableContent && badZone.text.contains("IANA time zone"))
            let closed = try await browser.post("/portal/events", pairs: Self.eventForm(csrf: csrf))
            #expect(closed.status == .unprocessableContent && closed.text.contains("id=\"audience-error\""))
            let noReminder = try await browser.post(
                "/portal/events",
                pairs: Self.eventForm(csrf: csrf, [("group", "class-7b")]).filter { $0.0 != "lead" })
            #expect(noReminder.status == .unprocessableContent && noReminder.text.contains("id=\"reminders-error\""))
            #expect(try await hub.database.collection(CollectionName.events).countDocuments([:]) == 0)
            // A form without the session's token changes nothing either.
            let forged = try await browser.post(
                "/portal/events", pairs: Self.eventForm(csrf: "forged", [("group", "class-7b")]))
            #expect(forged.status == .forbidden)
            #expect(try await hub.database.collection(CollectionName.events).countDocuments([:]) == 0)
        }
    }

    @Test func theRotaGridNamesEachNightsPersonsAndRefusesANightTheUserMayNotSendTo() async throws {
        try await HubHarness.with(seed: PortalRecipientsTests.seed, portal: Self.portal) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("dan", PortalRecipientsTests.danPassword)
            let csrf = try PortalBrowser.csrf(in: try await browser.get("/portal/events/new"))
            // A nightly duty from tomorrow at 21:00.
            let start = Self.berlinTime(daysAhead: 1, hour: 21)
            let made = try await browser.post(
                "/portal/events",
                pairs: Self.eventForm(
                    csrf: csrf,
                    [
                        ("title", "On call"), ("starts_at", start.field), ("repeat", "DAILY"),
                        ("message", "With {partners}"),
                    ]))
            let path = String(try #require(made.headers[.location]).prefix(while: { $0 != "?" }))
            let id = String(path.dropFirst("/portal/events/".count))
            let grid = try await browser.get(path + "/rota")
            let first = LocalDate(parsing: String(start.field.prefix(10)))!
            let second = first.adding(days: 1)
            #expect(grid.status == .ok && grid.text.contains("id=\"night-\(first)\"") && grid.text.contains("<table"))
            let saved = try await browser.post(
                path + "/rota",
                ["_csrf": csrf, "night-\(first)": "advisor-1, advisor-2", "night-\(second)": "advisor-3"])
            #expect(saved.status == .seeOther)
            let api = try await hub.request(.get, "/event/\(id)", as: .admin).json()
            #expect(api[path: "rota.\(first)"]?.arrayValue?.compactMap(\.stringValue) == ["advisor-1", "advisor-2"])
            #expect(api[path: "rota.\(second)"]?.arrayValue?.compactMap(\.stringValue) == ["advisor-3"])
            #expect(try await browser.get(path + "/rota").text.contains("value=\"advisor-1, advisor-2\""))
            // ann may not message persons: her night is refused beside it, the event unchanged.
            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            let annCSRF = try PortalBrowser.csrf(in: try await ann.get(path + "/rota"))
            let refused = try await ann.post(path + "/rota", ["_csrf": annCSRF, "night-\(first)": "someone-else"])
            #expect(refused.status == .unprocessableContent && refused.text.contains("id=\"night-\(first)-error\""))
            let after = try await hub.request(.get, "/event/\(id)", as: .admin).json()
            #expect(after[path: "rota.\(first)"]?.arrayValue?.compactMap(\.stringValue) == ["advisor-1", "advisor-2"])
        }
    }

    @Test func anEditInThePortalKeepsWhatTheFormDoesNotShow() async throws {
        try await HubHarness.with(seed: PortalRecipientsTests.seed, portal: Self.portal) { hub in
            // Made through the API: two groups, a time-sensitive Information with data and an acknowledgement asked.
            let start = Self.berlinTime(daysAhead: 4, hour: 10)
            let made = try await hub.request(
                .post, "/event", as: .admin,
                json: #"""
                    {"title": "Trip", "message": "Bring lunch.", "starts_at": "\#(start.field)", "tz": "Europe/Berlin",
                     "reminders": ["P1D"], "to": {"groups": ["chess", "class-7b"]}, "distribution": "Information",
                     "desc": "", "urgency": "time-sensitive", "data": {"bus": "2"}, "ack": {"responses": ["Yes", "No"], "within_s": 3600}}
                    """#)
            #expect(made.status == .created, "\(made.text)")
            let id = try #require(try made.json()["id"]?.stringValue)
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("dan", PortalRecipientsTests.danPassword)
            let form = try await browser.get("/portal/events/\(id)/edit")
            #expect(form.text.contains("id=\"to-fixed\" checked"))
            let csrf = try PortalBrowser.csrf(in: form)
            // dan may send to chess only: the audience kept is the event's, and the service holds him to it.
            let refused = try await browser.post(
                "/portal/events/\(id)",
                pairs: Self.eventForm(
                    csrf: csrf, [("to", "fixed"), ("title", "Trip (moved)"), ("starts_at", start.field)]))
            #expect(refused.status == .unprocessableContent && refused.text.contains("id=\"audience-error\""))
            // An admin's edit through the portal keeps the two groups, the urgency, the data and the acknowledgement.
            _ = try await hub.database.collection(CollectionName.users).updateOne(
                ["username": "dan"], ["$set": ["role": "admin"]])
            var admin = PortalBrowser(hub: hub)
            _ = try await admin.login("dan", PortalRecipientsTests.danPassword)
            let adminCSRF = try PortalBrowser.csrf(in: try await admin.get("/portal/events/\(id)/edit"))
            let edited = try await admin.post(
                "/portal/events/\(id)",
                pairs: Self.eventForm(
                    csrf: adminCSRF, [("to", "fixed"), ("title", "Trip (moved)"), ("starts_at", start.field)]))
            #expect(edited.status == .seeOther, "\(edited.text.prefix(600))")
            let event = try await hub.request(.get, "/event/\(id)", as: .admin).json()
            #expect(event["title"] == "Trip (moved)")
            #expect(event[path: "to.groups"]?.arrayValue?.compactMap(\.stringValue) == ["chess", "class-7b"])
            #expect(event["distribution"] == "Information" && event["urgency"] == "time-sensitive")
            #expect(event[path: "data.bus"] == "2" && event[path: "ack.responses"] == ["Yes", "No"])
        }
    }
}
