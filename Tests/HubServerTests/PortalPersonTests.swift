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

/// The portal's page of a person (issue 45): an admin sees the preferences the person set (quiet hours, language,
/// digest time, each subject's and group's delivery by name) and their next digest, read only; a group's members
/// link to it; a communicator is refused; a malformed id is refused beside the field.
@Suite struct PortalPersonTests {
    @Test func anAdminSeesAPersonsPreferencesAndACommunicatorDoesNot() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            let settings = PersonSettingsDAO(database: hub.database)
            try await settings.apply(
                PersonSettingsDAO.Change(
                    quietHours: try QuietHours.parse(from: "21:30", to: "06:45", tz: "Europe/Berlin").get(),
                    locale: "de"),
                to: "student-1")
            try await settings.setDelivery(.digest, scope: .group, id: "chess", for: "student-1")
            try await settings.setDelivery(.off, scope: .subject, id: "no-such-topic", for: "student-1")
            try await DigestScheduleDAO(database: hub.database).plan("student-1", dueAt: 1_800_000_000_000)
            _ = try await GroupService(database: hub.database).replace(
                id: "chess", name: "Chess club", members: ["student-1"], access: [])

            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let group = try await root.get("/portal/admin/groups/chess")
            #expect(group.text.contains(#"<a href="/portal/admin/persons?id=student-1"><code>student-1</code></a>"#))
            let page = try await root.get("/portal/admin/persons?id=student-1")
            #expect(page.status == .ok)
            #expect(page.text.contains("21:30–06:45 (Europe/Berlin)") && page.text.contains(#"id="locale">de<"#))
            // The school's 17:00 on the person's zone (their quiet hours'), said as the school's.
            #expect(
                page.text.contains("17:00 (Europe/Berlin), the school&#39;s")
                    || page.text.contains("17:00 (Europe/Berlin), the school's"))
            #expect(
                page.text.contains("Chess club <code>chess</code>")
                    && page.text.contains(#"<td class="mode">digest</td>"#))
            #expect(
                page.text.contains("<code>no-such-topic</code>") && page.text.contains(#"<td class="mode">off</td>"#))
            #expect(
                page.text.contains(#"id="next-digest">2027-01-15 08:00 ("#), "the next digest on the school's clock")
            // Read only: no form posts anything but the layout's logout.
            #expect(page.text.components(separatedBy: #"method="post""#).count == 2)
            let nobody = try await root.get("/portal/admin/persons?id=nobody-at-all")
            #expect(nobody.status == .ok && nobody.text.contains(#"id="no-choices""#))
            let bad = try await root.get("/portal/admin/persons?id=" + String(repeating: "x", count: 300))
            #expect(bad.status == .unprocessableContent && bad.text.contains(#"id="id-error""#))

            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            #expect(try await ann.get("/portal/admin/persons?id=student-1").status == .forbidden)
        }
    }
}
