import DAO
import FakeFCM
import Foundation
import HTTPTypes
import HubCore
import HubServer
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// Two-person approval end to end: POST /message held by `ApprovalPolicy` (202), nothing at the fake FCM until
/// another person approves, the refusals of the author and of a token, rejection, expiry, an admin's override, and a
/// subject marked `"approval": "required"`.
@Suite("Two-person approval")
struct ApprovalTests {
    static let bobPassword = "bob-password-1"
    static let ann = HubHarness.Caller.basic("ann", HubHarness.annPassword)
    static let bob = HubHarness.Caller.basic("bob", bobPassword)
    static let booksTopic = RelayOutboxTests.booksTopic

    /// The legacy cube and a second communicator, bob, who may send to the same subjects as ann.
    static let seed: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await HubHarness.legacy(database)
        let services = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4)
        try await services.accounts.addUser("bob", role: .communicator, password: bobPassword)
    }

    /// Runs `body` against a hub whose stored approval rules have the defaults on (or are `policy`), relaying to a fake FCM.
    static func with(
        _ test: String = #function, policy: ApprovalPolicy = ApprovalPolicy(defaults: true),
        _ body: @Sendable (HubHarness, FakeFCM) async throws -> Void
    ) async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                test, seed: seed, relay: try RelayOutboxTests.relay(to: fake),
                approval: policy
            ) { hub in
                try await body(hub, fake)
            }
        }
    }

    static func alert(_ title: String, extra: String = "") -> String {
        RelayOutboxTests.alert(title, extra: extra)
    }

    /// POSTs `json` as `caller`, expects `status`, returns the body.
    static func post(
        _ hub: HubHarness, _ json: String, as caller: HubHarness.Caller,
        expect status: HTTPResponse.Status
    ) async throws -> BSONDocument {
        let response = try await hub.request(.post, "/message", as: caller, json: json)
        #expect(response.status == status)
        return try response.json()
    }

    static func key(_ body: BSONDocument) throws -> ObjectID {
        try #require(body["msi_key"]?.stringValue.flatMap { ObjectID(hex: $0) })
    }

    /// Sends an ordinary message (201) and waits until the fake FCM has it: what was held before it and is not at
    /// FCM by then was not sent by the relay that sent this one.
    static func sendOrdinary(_ hub: HubHarness, _ fake: FakeFCM, title: String) async throws {
        let body = try await post(hub, RelayOutboxTests.information(title), as: .communicator, expect: .created)
        let key = try key(body)
        try await eventually { fake.received.contains { $0.data["msi_key"] == key.hex } }
    }

    static func errorCode(_ response: TestResponse) -> String? {
        (try? response.json())?[path: "error.code"]?.stringValue
    }

    static func field(_ response: TestResponse, _ key: String) -> BSONValue? {
        (try? response.json())?[key]
    }

    @Test func aForcedSubjectsMessageWaitsForAnotherPersonsApproval() async throws {
        try await Self.with { hub, fake in
            try await hub.waitForRelayRecord()
            let held = try await Self.post(hub, Self.alert("School closed"), as: Self.ann, expect: .accepted)
            #expect(held["state"] == "awaiting_approval")
            #expect(held[path: "relay.state"] == "awaiting_approval")
            #expect(held[path: "approval.requested_by"] == "ann")
            #expect(held[path: "approval.reasons"] == ["forced_subject"])
            let key = try Self.key(held)

            // Nobody else sees it: not by its key, not in the public history.
            #expect(try await hub.request(.get, "/message/\(key.hex)").status == .notFound)
            let history = try await hub.request(.get, "/message?topic_key=\(Legacy.hoursTopic)").json()
            #expect(history["messages"]?.arrayValue?.isEmpty == true)
            // Its author sees it with its state.
            let own = try await hub.request(.get, "/message/\(key.hex)", as: Self.ann).json()
            #expect(own["state"] == "awaiting_approval")
            // Those who may approve list it; its author does not.
            let bobs = try await hub.request(.get, "/approvals", as: Self.bob).json()
            #expect(bobs["awaiting"]?.arrayValue?.compactMap { $0.documentValue?["msi_key"]?.stringValue } == [key.hex])
            let anns = try await hub.request(.get, "/approvals", as: Self.ann).json()
            #expect(anns["awaiting"]?.arrayValue?.isEmpty == true)

            // An ordinary message is unaffected and reaches FCM; the held one has not.
            try await Self.sendOrdinary(hub, fake, title: "Books")
            #expect(!fake.received.contains { $0.data["msi_key"] == key.hex })

            // Its author may not approve it, nor may a token.
            let own403 = try await hub.request(.post, "/message/\(key.hex)/approve", as: Self.ann)
            #expect(own403.status == .forbidden && Self.errorCode(own403) == "approval_self")
            let token403 = try await hub.request(.post, "/message/\(key.hex)/approve", as: .communicator)
            #expect(token403.status == .forbidden && Self.errorCode(token403) == "approval_needs_user")
            #expect(!fake.received.contains { $0.data["msi_key"] == key.hex })

            // Another person approves: it is sent.
            let approved = try await hub.request(
                .post, "/message/\(key.hex)/approve", as: Self.bob, json: #"{"version": 1}"#)
            #expect(approved.status == .ok)
            #expect(try approved.json()[path: "approval.by"] == "bob")
            try await eventually { fake.received.filter { $0.data["msi_key"] == key.hex }.count == 2 }
            try await eventually { try await hub.relayState(key) == "sent" }
            // The approval is in the audit log, by bob.
            let entry = try await AuditReading.first(hub.database, action: "message.approve")
            #expect(entry?[path: "target.id"]?.stringValue == key.hex)
            #expect(entry?[path: "actor.name"]?.stringValue == "bob")
            // A second approval finds nothing to approve.
            let again = try await hub.request(
                .post, "/message/\(key.hex)/approve", as: Self.bob, json: #"{"version": 1}"#)
            #expect(again.status == .conflict && Self.errorCode(again) == "approval_not_pending")
            // Now public.
            #expect(try await hub.request(.get, "/message/\(key.hex)").status == .ok)
        }
    }

    @Test func aRejectedCriticalMessageIsNeverSent() async throws {
        try await Self.with { hub, fake in
            let json =
                #"{"title": "Drill", "desc": "", "message": "Evacuate now.", "topic_key": "\#(Self.booksTopic)", "distribution": "Information", "urgency": "critical"}"#
            let held = try await Self.post(hub, json, as: Self.ann, expect: .accepted)
            #expect(held[path: "approval.reasons"] == ["critical"])
            let key = try Self.key(held)

            let noReason = try await hub.request(
                .post, "/message/\(key.hex)/reject", as: Self.bob, json: #"{"reason": " "}"#)
            #expect(noReason.status == .unprocessableContent && Self.errorCode(noReason) == "reason_required")
            let rejected = try await hub.request(
                .post, "/message/\(key.hex)/reject", as: Self.bob,
                json: #"{"reason": "not a drill day"}"#)
            #expect(rejected.status == .ok)
            let body = try rejected.json()
            #expect(body["state"] == "rejected" && body[path: "relay.state"] == "rejected")
            #expect(body[path: "approval.reason"] == "not a drill day" && body[path: "approval.by"] == "bob")
            let late = try await hub.request(
                .post, "/message/\(key.hex)/approve", as: Self.bob, json: #"{"version": 1}"#)
            #expect(late.status == .conflict && Self.errorCode(late) == "approval_not_pending")

            let entry = try await AuditReading.first(hub.database, action: "message.reject")
            #expect(entry?[path: "target.id"]?.stringValue == key.hex)
            try await Self.sendOrdinary(hub, fake, title: "After the rejection")
            #expect(!fake.received.contains { $0.data["msi_key"] == key.hex })
            #expect(try await hub.request(.get, "/message/\(key.hex)").status == .notFound)
        }
    }

    @Test func anExpiredRequestIsNeverSentNorApproved() async throws {
        try await Self.with { hub, fake in
            let held = try await Self.post(hub, Self.alert("Late"), as: Self.ann, expect: .accepted)
            let key = try Self.key(held)
            let expiresAt = try #require(held[path: "approval.expires_at"]?.int64Value)
            let requestedAt = try #require(held[path: "approval.requested_at"]?.int64Value)
            #expect(expiresAt - requestedAt == 3_600_000)
            // The hour passes: the stored expiry is moved into the past, as the clock would move past it.
            try await hub.database.collection(CollectionName.message).updateOne(
                ["msi_key": .objectID(key)], ["$set": ["approval.expires_at": .int64(requestedAt - 1)]])

            let late = try await hub.request(
                .post, "/message/\(key.hex)/approve", as: Self.bob, json: #"{"version": 1}"#)
            #expect(late.status == .conflict && Self.errorCode(late) == "approval_expired")
            let own = try await hub.request(.get, "/message/\(key.hex)", as: Self.ann).json()
            #expect(own["state"] == "expired")
            let bobs = try await hub.request(.get, "/approvals", as: Self.bob).json()
            #expect(bobs["awaiting"]?.arrayValue?.isEmpty == true)

            try await Self.sendOrdinary(hub, fake, title: "After the expiry")
            #expect(!fake.received.contains { $0.data["msi_key"] == key.hex })

            // The sweep records an expiry once, with its audit entry (the refused approval recorded this one).
            let second = try await Self.post(hub, Self.alert("Later still"), as: Self.ann, expect: .accepted)
            let secondKey = try Self.key(second)
            try await hub.database.collection(CollectionName.message).updateOne(
                ["msi_key": .objectID(secondKey)], ["$set": ["approval.expires_at": .int64(requestedAt - 1)]])
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            #expect(try await services.approvals.expireDue() == 1)
            #expect(try await services.approvals.expireDue() == 0)
            let stored = try await hub.request(.get, "/message/\(secondKey.hex)", as: Self.ann).json()
            #expect(stored["state"] == "expired" && stored[path: "approval.state"] == "expired")
            let entries = try await hub.database.collection(CollectionName.audit).find([
                "action": "message.approval_expire"
            ])
            #expect(Set(entries.compactMap { $0[path: "target.id"]?.stringValue }) == [key.hex, secondKey.hex])
        }
    }

    @Test func anAdminsOverrideSendsAtOnceAndIsFlaggedForReview() async throws {
        try await Self.with { hub, fake in
            let refused = try await hub.request(
                .post, "/message", as: Self.ann,
                json: Self.alert("Fire", extra: #", "override": "fire in the lab""#))
            #expect(refused.status == .forbidden && Self.errorCode(refused) == "override_forbidden")

            let sent = try await Self.post(
                hub, Self.alert("Fire", extra: #", "override": "fire in the lab""#),
                as: .admin, expect: .created)
            #expect(sent["state"] == nil)
            #expect(sent[path: "override.by"] == "admin-script" && sent[path: "override.reason"] == "fire in the lab")
            #expect(sent[path: "override.reviewed"] == false)
            let key = try Self.key(sent)
            try await eventually { fake.received.filter { $0.data["msi_key"] == key.hex }.count == 2 }

            try await eventually {
                try await AuditReading.first(hub.database, action: "message.override") != nil
            }
            let review = try await hub.request(.get, "/approvals", as: .admin).json()
            #expect(
                review["overridden"]?.arrayValue?.compactMap { $0.documentValue?["msi_key"]?.stringValue } == [key.hex])
            let bobs = try await hub.request(.get, "/approvals", as: Self.bob).json()
            #expect(bobs["overridden"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func aSubjectMarkedApprovalRequiredHoldsEvenWithoutTheDefaults() async throws {
        try await FakeFCM.with { fake in
            // The harness's default policy: the default rules off, the marks on.
            try await HubHarness.with(seed: Self.seed, relay: try RelayOutboxTests.relay(to: fake)) { hub in
                let path = "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)/\(Legacy.booksID.hex)"
                let marked = try await hub.request(
                    .put, path, as: .admin,
                    json:
                        #"{"name": "New books", "desc": "", "opt": {"level": "", "distribution": "Information"}, "approval": "required"}"#
                )
                #expect(marked.status == .ok && Self.field(marked, "approval") == "required")
                let invalid = try await hub.request(
                    .put, path, as: .admin,
                    json:
                        #"{"name": "New books", "desc": "", "opt": {"level": "", "distribution": "Information"}, "approval": "maybe"}"#
                )
                #expect(invalid.status == .unprocessableContent)

                let held = try await Self.post(
                    hub, RelayOutboxTests.information("Held"), as: .communicator,
                    expect: .accepted)
                #expect(held[path: "approval.reasons"] == ["marked_required"])
                // An unmarked Forced subject: the default rules are off here.
                _ = try await Self.post(hub, Self.alert("Not held"), as: .communicator, expect: .created)

                let unmarked = try await hub.request(
                    .put, path, as: .admin,
                    json:
                        #"{"name": "New books", "desc": "", "opt": {"level": "", "distribution": "Information"}, "approval": "default"}"#
                )
                #expect(unmarked.status == .ok && Self.field(unmarked, "approval") == nil)
                try await Self.sendOrdinary(hub, fake, title: "Free again")
                #expect(!fake.received.contains { $0.data["msi_key"] == (try? Self.key(held).hex) })
            }
        }
    }

    @Test func aGroupAboveTheSizeAndASampleOfAForcedSubjectNeedApproval() async throws {
        try await Self.with(policy: ApprovalPolicy(groupSize: 2, defaults: true)) { hub, fake in
            for (group, members) in [("small", ["p1", "p2"]), ("large", ["p1", "p2", "p3"])] {
                let roster = try GroupRoutesTests.roster(group, members, access: ["bulletin-bot"])
                #expect(try await hub.request(.put, "/group/\(group)", as: .admin, json: roster).status == .created)
            }
            func toGroup(_ group: String) -> String {
                #"{"title": "Trip", "desc": "", "message": "The trip leaves at 8.", "to": {"groups": ["\#(group)"]}, "distribution": "Information"}"#
            }
            _ = try await Self.post(hub, toGroup("small"), as: .communicator, expect: .created)
            let held = try await Self.post(hub, toGroup("large"), as: .communicator, expect: .accepted)
            #expect(held[path: "approval.reasons"] == ["large_group"])
            // A sample of a Forced subject's devices counts as the subject.
            let sample = try await Self.post(
                hub, Self.alert("Sampled", extra: #", "sample": 0.5"#), as: .communicator,
                expect: .accepted)
            #expect(sample[path: "approval.reasons"] == ["forced_subject"])
        }
    }

    @Test func ofTwoApprovalsAtOnceOneWins() async throws {
        try await Self.with { hub, fake in
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            try await services.accounts.addUser("cleo", role: .communicator, password: "cleo-password-1")
            let held = try await Self.post(hub, Self.alert("Race"), as: Self.ann, expect: .accepted)
            let key = try Self.key(held)
            async let first = hub.request(.post, "/message/\(key.hex)/approve", as: Self.bob, json: #"{"version": 1}"#)
            async let second = hub.request(
                .post, "/message/\(key.hex)/approve", as: .basic("cleo", "cleo-password-1"), json: #"{"version": 1}"#)
            let statuses = [try await first.status, try await second.status]
            #expect(statuses.filter { $0 == .ok }.count == 1)
            #expect(statuses.filter { $0 == .conflict }.count == 1)
            try await eventually { fake.received.filter { $0.data["msi_key"] == key.hex }.count == 2 }
            try await Self.sendOrdinary(hub, fake, title: "After the race")
            #expect(fake.received.filter { $0.data["msi_key"] == key.hex }.count == 2)
        }
    }

    @Test func theVariablesAreRead() throws {
        let defaults = try HubConfiguration.fromEnvironment([:]).approval
        // The default rules are off unless asked for: a default deployment keeps the legacy contract.
        #expect(defaults.groupSize == 500 && defaults.timeout == .seconds(3600) && !defaults.defaults)
        let set = try HubConfiguration.fromEnvironment([
            "APPROVAL_GROUP_SIZE": "40", "APPROVAL_TIMEOUT": "90m",
            "APPROVAL_DEFAULTS": "on",
        ]).approval
        #expect(set.groupSize == 40 && set.timeout == .seconds(5400) && set.defaults)
        #expect(try !HubConfiguration.fromEnvironment(["APPROVAL_DEFAULTS": "off"]).approval.defaults)
        #expect(try HubConfiguration.fromEnvironment(["APPROVAL_TIMEOUT": "600"]).approval.timeout == .seconds(600))
        #expect(try HubConfiguration.fromEnvironment(["APPROVAL_TIMEOUT": "2h"]).approval.timeout == .seconds(7200))
        for bad in [
            ["APPROVAL_TIMEOUT": "soon"], ["APPROVAL_TIMEOUT": "10s"], ["APPROVAL_TIMEOUT": "8d"],
            ["APPROVAL_GROUP_SIZE": "0"], ["APPROVAL_DEFAULTS": "maybe"],
        ] {
            #expect(throws: ConfigurationError.self) { try HubConfiguration.fromEnvironment(bad) }
        }
    }

    @Test func thePortalHoldsASendAndAnotherPersonRejectsItThere() async throws {
        try await Self.with { hub, fake in
            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            let form = try await ann.get("/portal/send")
            let sent = try await ann.post(
                "/portal/send",
                [
                    "_csrf": try PortalBrowser.csrf(in: form), "channel": Legacy.channelID.hex,
                    "area": Legacy.libraryID.hex,
                    "subject": Legacy.hoursID.hex, "title": "Closed", "desc": "Closed today",
                    "message": "Closed all day.",
                ])
            let location = try #require(sent.headers[.location])
            let key = try #require(ObjectID(hex: String(location.split(separator: "/").last ?? "")))
            let confirmation = try await ann.get(location)
            #expect(
                confirmation.text.contains("waits for a second person&#39;s approval")
                    || confirmation.text.contains("waits for a second person's approval"))
            #expect(!(try await ann.get("/portal/approvals")).text.contains("approval-\(key.hex)"))

            var bob = PortalBrowser(hub: hub)
            _ = try await bob.login("bob", Self.bobPassword)
            let menu = try await bob.get("/portal")
            #expect(menu.text.contains(#"<strong id="approvals-count">1</strong>"#))
            let page = try await bob.get("/portal/approvals")
            #expect(page.text.contains("id=\"approval-\(key.hex)\"") && page.text.contains("Closed all day."))
            let csrf = try PortalBrowser.csrf(in: page)
            // Without the form's token: refused, nothing decided.
            let forged = try await bob.post("/portal/approvals/\(key.hex)/reject", ["reason": "no"])
            #expect(forged.status == .forbidden)
            let noReason = try await bob.post("/portal/approvals/\(key.hex)/reject", ["_csrf": csrf, "reason": " "])
            #expect(
                noReason.status == .unprocessableContent && noReason.text.contains("Say why you reject the message."))
            let rejected = try await bob.post(
                "/portal/approvals/\(key.hex)/reject", ["_csrf": csrf, "reason": "wrong day"])
            #expect(rejected.status == .seeOther || rejected.status == .found)
            let stored = try await hub.request(.get, "/message/\(key.hex)", as: Self.ann).json()
            #expect(stored["state"] == "rejected" && stored[path: "approval.reason"] == "wrong day")
            try await Self.sendOrdinary(hub, fake, title: "After the portal's rejection")
            #expect(!fake.received.contains { $0.data["msi_key"] == key.hex })
        }
    }
}
