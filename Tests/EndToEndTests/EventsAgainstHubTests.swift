import Foundation
import MSIKit
import Testing

/// MSIKit's event fields against a real hub: an announced event reaches a member's phone with what an app needs to
/// show it and save it (`Message.event`), and the phone fetches the event's calendar file with its own secret.
@Suite("MSIKit reads events")
struct EventsAgainstHubTests {
    @Test func anAnnouncedEventReachesAMembersPhoneWithItsFieldsAndItsCalendarFile() async throws {
        try await LiveHub.with(persons: PersonBindingAgainstHubTests.persons()) { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "event-phone-1")
            try await phone.start()
            #expect(
                try await phone.client.bind(assertion: try await PersonBindingAgainstHubTests.assertion("student-9"))
                    == "student-9")
            try await hub.putGroup("trip", members: ["student-9"])
            let (status, body) = try await hub.request(
                "POST", "event",
                [
                    "title": "Parents' evening", "message": "Meet the teachers.", "starts_at": "2027-06-10T18:00:00",
                    "tz": "Europe/Berlin", "location": "Hall", "reminders": ["P1D"], "announce": true,
                    "to": ["groups": ["trip"]],
                ])
            try #require(status == 201, "POST /event answered \(status): \(String(decoding: body, as: UTF8.self))")
            let id = try #require((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["id"] as? String)

            try await phone.catchUp()
            let announcement = try #require(phone.shownMessages.map(\.message).first { $0.event != nil })
            let event = try #require(announcement.event)
            #expect(event.eventID == id && !event.isRecurringNotice)
            #expect(event.occurrence == "2027-06-10" && event.startsLocal == "2027-06-10T18:00:00")
            // 18:00 in Berlin's summer time.
            #expect(event.startsAt == Date(timeIntervalSince1970: 1_812_643_200))
            #expect(event.timeZone?.identifier == "Europe/Berlin")
            #expect(event.location == "Hall" && event.reminder == nil)
            #expect(event.calendarPath == "/event/\(id).ics")

            let file = String(decoding: try await phone.client.calendarFile(for: event), as: UTF8.self)
            #expect(file.hasPrefix("BEGIN:VCALENDAR\r\n") && file.hasSuffix("END:VCALENDAR\r\n"))
            #expect(file.contains("LOCATION:Hall\r\n") && file.contains("SUMMARY:Parents' evening\r\n"))
        }
    }

    @Test func eventFieldsAreReadFromAMessagesDataAndOtherMessagesHaveNone() {
        let reminder = EventReference(data: [
            "event": "6b0b8565238ccc24b70509a6", "occurrence": "2027-01-16", "starts_at": "1800086400000",
            "starts_local": "2027-01-16T09:00:00", "tz": "Europe/Berlin", "reminder": "PT10M",
            "ics": "/event/6b0b8565238ccc24b70509a6.ics",
        ])
        #expect(reminder?.reminder == "PT10M" && reminder?.startsAt == Date(timeIntervalSince1970: 1_800_086_400))
        let notice = EventReference(data: ["series": "6b0b8565238ccc24b70509a6", "occurrence": "2027-01-18"])
        #expect(notice?.isRecurringNotice == true && notice?.calendarPath == nil)
        #expect(EventReference(data: ["group": "chess"]) == nil)
        #expect(EventReference(data: ["event": "not-an-id"]) == nil)
    }
}
