import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The portal's send form to a group or to persons: the groups offered are those the recipient policy opens to the
/// user, persons only to users with the right `direct`, the message stored with `to`, refusals beside their field.
@Suite struct PortalRecipientsTests {
    static let danPassword = "dan-password-1"

    /// The legacy cube; groups `class-7b` (open to ann; student-1 has two active devices, student-2 an unregistered
    /// one), `staff` (open to nobody) and `chess` (open to dan); dan, a communicator with the right `direct`.
    static let seed: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await HubHarness.legacy(database)
        let groups = GroupDAO(database: database)
        _ = try await groups.replace(
            id: "class-7b", name: "Class 7B", access: ["ann"],
            persons: ["student-1", "student-2"])
        _ = try await groups.replace(id: "staff", name: "Staff", access: [], persons: ["teacher-1"])
        _ = try await groups.replace(id: "chess", name: "Chess club", access: ["dan"], persons: ["student-3"])
        let devices = DeviceDAO(database: database)
        for (registration, person) in [
            ("reg-a", "student-1"), ("reg-b", "student-1"), ("reg-c", "student-2"),
            ("reg-d", "teacher-1"),
        ] {
            let device = try await devices.register(
                registration: registration, platform: .android, locale: nil,
                appVersion: nil, secretHash: "hash"
            ).device
            _ = try await devices.bind(device.id, person: person)
        }
        try await devices.markUnregistered(registration: "reg-c")
        let users = UserDAO(database: database)
        let hash = try await Credentials(users: users, tokens: TokenDAO(database: database), bcryptCost: 4)
            .hash(password: danPassword)
        _ = try await users.add(username: "dan", passwordHash: hash, role: .communicator, direct: true)
    }

    /// A filled form to `to` (group or persons) as the browser posts it, with subject fields the server must not read.
    static func form(csrf: String, to kind: String, _ fields: [String: String]) -> [String: String] {
        var form = [
            "_csrf": csrf, "to": kind, "title": "Trip", "desc": "Bring a coat",
            "message": "The trip is on Friday.", "distribution": "Alert",
            "channel": Fixtures.Legacy.channelID.hex, "area": Fixtures.Legacy.libraryID.hex,
            "subject": Fixtures.Legacy.hoursID.hex,
        ]
        form.merge(fields) { $1 }
        return form
    }

    @Test func aCommunicatorIsOfferedOnlyTheGroupsWhoseAccessNamesThemAndNoPersons() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let page = try await browser.get("/portal/send")
            #expect(page.status == .ok)
            #expect(page.text.contains("id=\"to-subject\"") && page.text.contains("id=\"to-group\""))
            // Two members; student-1's two active devices (student-2's is unregistered).
            #expect(
                page.text.contains(
                    "<option value=\"class-7b\" selected>Class 7B · 2 members · 2 registered devices</option>"))
            #expect(!page.text.contains("Staff") && !page.text.contains("Chess club"))
            #expect(!page.text.contains("id=\"persons\"") && !page.text.contains("id=\"to-persons\""))
        }
    }

    @Test func aUserWithTheRightDirectIsOfferedPersons() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("dan", Self.danPassword)
            let page = try await browser.get("/portal/send?to=persons")
            #expect(page.text.contains("id=\"persons\"") && page.text.contains("id=\"to-persons\" checked"))
            #expect(page.text.contains("Chess club · 1 member · 0 registered devices"))
            #expect(!page.text.contains("Class 7B"))
        }
    }

    @Test func sendingToAGroupStoresTheMessageToTheGroupAndShowsWhomItWentTo() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let csrf = try PortalBrowser.csrf(in: try await browser.get("/portal/send"))
            let sent = try await browser.post("/portal/send", Self.form(csrf: csrf, to: "group", ["group": "class-7b"]))
            #expect(sent.status == .seeOther)
            let location = try #require(sent.headers[.location])
            let messages = hub.database.collection(CollectionName.message)
            let stored = try #require(try await messages.findOne([:]))
            #expect(location == "/portal/messages/\(try #require(stored["msi_key"]?.objectIDValue).hex)")
            #expect(stored[path: "to.groups"]?.arrayValue?.compactMap(\.stringValue) == ["class-7b"])
            #expect(stored[path: "to.persons"]?.arrayValue?.isEmpty == true)
            #expect(stored["topic_key"] == nil)  // the subject fields posted beside were not read
            #expect(stored["distribution"]?.stringValue == "Alert" && stored["desc"]?.stringValue == "Bring a coat")
            #expect(stored["sender"]?.stringValue == "ann")
            let confirmation = try await browser.get(location)
            #expect(confirmation.text.contains("id=\"sent-to\">To group Class 7B</strong>"))
            #expect(confirmation.text.contains("href=\"/portal/send?to=group&amp;group=class-7b\""))
            let list = try await browser.get("/portal/sent")
            #expect(list.text.contains("<span>To group Class 7B</span>"))
            // An Information sends no notification text, whatever the field holds.
            let information = try await browser.post(
                "/portal/send",
                Self.form(
                    csrf: csrf, to: "group", ["group": "class-7b", "distribution": "Information", "title": "Quiet"]))
            #expect(information.status == .seeOther)
            let quiet = try #require(try await messages.findOne(["title": "Quiet"]))
            #expect(quiet["distribution"]?.stringValue == "Information" && quiet["desc"]?.stringValue == "")
        }
    }

    @Test func aGroupNotOpenToTheUserIsRefusedBesideTheFieldAndNothingIsStored() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let csrf = try PortalBrowser.csrf(in: try await browser.get("/portal/send"))
            let closed = try await browser.post("/portal/send", Self.form(csrf: csrf, to: "group", ["group": "staff"]))
            #expect(closed.status == .unprocessableContent)
            #expect(closed.text.contains("id=\"group-error\">You may not send to this group"))
            #expect(closed.text.contains("id=\"to-group\" checked") && closed.text.contains("value=\"Trip\""))
            let missing = try await browser.post("/portal/send", Self.form(csrf: csrf, to: "group", ["group": "nope"]))
            #expect(missing.status == .unprocessableContent)
            #expect(missing.text.contains("id=\"group-error\">This group no longer exists."))
            let none = try await browser.post("/portal/send", Self.form(csrf: csrf, to: "group", ["group": ""]))
            #expect(none.text.contains("id=\"group-error\">Choose a group."))
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }

    @Test func personsAreRefusedToAUserWithoutDirectEvenPostedByHandAndSentForOneWithIt() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            let messages = hub.database.collection(CollectionName.message)
            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            let annCSRF = try PortalBrowser.csrf(in: try await ann.get("/portal/send"))
            let refused = try await ann.post(
                "/portal/send",
                Self.form(csrf: annCSRF, to: "persons", ["persons": "student-1"]))
            #expect(refused.status == .unprocessableContent)
            // Ann's form has no persons field: the refusal shows beside the choice of recipient.
            #expect(
                refused.text.contains(
                    "id=\"recipients-error\" role=\"alert\">You may not send to persons directly"))
            #expect(try await messages.countDocuments() == 0)

            var dan = PortalBrowser(hub: hub)
            _ = try await dan.login("dan", Self.danPassword)
            let danCSRF = try PortalBrowser.csrf(in: try await dan.get("/portal/send"))
            let tooMany = (0...1_000).map { "p\($0)" }.joined(separator: "\n")
            let over = try await dan.post("/portal/send", Self.form(csrf: danCSRF, to: "persons", ["persons": tooMany]))
            #expect(over.status == .unprocessableContent)
            #expect(
                over.text.contains(
                    "id=\"persons-error\">This names 1001 persons; at most 1000 fit in one message."))
            #expect(try await messages.countDocuments() == 0)
            let sent = try await dan.post(
                "/portal/send",
                Self.form(
                    csrf: danCSRF, to: "persons", ["persons": "student-1, student-2\n\nstudent-3\n"]))
            #expect(sent.status == .seeOther)
            let stored = try #require(try await messages.findOne([:]))
            #expect(
                stored[path: "to.persons"]?.arrayValue?.compactMap(\.stringValue)
                    == ["student-1", "student-2", "student-3"])
            let confirmation = try await dan.get(try #require(sent.headers[.location]))
            #expect(confirmation.text.contains("id=\"sent-to\">To 3 persons</strong>"))
        }
    }
}
