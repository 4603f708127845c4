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

/// The approval rule kept safe and the legacy contract kept: a default deployment relays a legacy POST /message to
/// a Forced subject at once (201); the rules are stored, turned on by an admin and applied by every replica; no text
/// reaches phones without a second person once the rule holds a message (corrections included, each approval naming
/// the version it read); the audience is counted whole, and at the urgency escalation reaches.
@Suite("Approval: the contract and no way around the second person")
struct ApprovalSafetyTests {
    static let ann = ApprovalTests.ann
    static let bob = ApprovalTests.bob

    /// The hub as a new deployment gets it: the approval rules as `HubConfiguration` reads an empty environment.
    static func withDefaultDeployment(
        _ test: String = #function,
        _ body: @Sendable (HubHarness, FakeFCM) async throws -> Void
    ) async throws {
        let approval = try HubConfiguration.fromEnvironment([:]).approval
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                test, seed: ApprovalTests.seed, relay: try RelayOutboxTests.relay(to: fake),
                approval: approval
            ) { hub in
                try await body(hub, fake)
            }
        }
    }

    static func requests(_ fake: FakeFCM, _ key: ObjectID) -> [FakeFCMRequest] {
        fake.received.filter { $0.data["msi_key"] == key.hex }
    }

    static func version(_ version: Int64) -> String { #"{"version": \#(version)}"# }

    @Test func aLegacyPostToAForcedSubjectOnADefaultDeploymentIs201AndReachesFCM() async throws {
        try await Self.withDefaultDeployment { hub, fake in
            // Exactly the legacy body: no urgency, no override, a Forced Alert subject.
            let response = try await hub.request(
                .post, "/message", as: .communicator,
                json: ApprovalTests.alert("Snow day"))
            #expect(response.status == .created, "\(response.text)")
            let body = try response.json()
            #expect(body["state"] == nil && body["approval"] == nil)
            let key = try ApprovalTests.key(body)
            // An Alert goes as two requests: the notification and the data.
            try await eventually("both requests reached FCM") { Self.requests(fake, key).count == 2 }
            try await eventually { try await hub.relayState(key) == "sent" }
            // The rules stored on the first start are the environment's: off.
            let stored = try await hub.database.collection(CollectionName.settings).findOne(["_id": "approval"])
            #expect(stored?["defaults"]?.boolValue == false)
        }
    }

    @Test func anAdminTurnsTheRulesOnAndTheChangeIsAuditedAndChecked() async throws {
        try await Self.withDefaultDeployment { hub, fake in
            let before = try await hub.request(.get, "/settings/approval", as: .admin)
            #expect(before.status == .ok)
            #expect(try before.json() == ["defaults": false, "group_size": 500, "timeout_seconds": 3600])
            // Only admins, and only values in range; a refused change changes nothing.
            let communicator = try await hub.request(
                .put, "/settings/approval", as: .communicator,
                json: #"{"defaults": true}"#)
            #expect(communicator.status == .forbidden)
            for bad in [
                #"{"group_size": 0}"#, #"{"timeout_seconds": 30}"#, #"{"defaults": "yes"}"#,
                #"{"defaults": true, "quorum": 2}"#,
            ] {
                let refused = try await hub.request(.put, "/settings/approval", as: .admin, json: bad)
                #expect(refused.status == .unprocessableContent, "\(bad): \(refused.text)")
            }
            #expect(try await hub.request(.get, "/settings/approval", as: .admin).json()["defaults"] == false)

            let on = try await hub.request(
                .put, "/settings/approval", as: .admin,
                json: #"{"defaults": true, "timeout_seconds": 600}"#)
            #expect(on.status == .ok, "\(on.text)")
            #expect(try on.json() == ["defaults": true, "group_size": 500, "timeout_seconds": 600])
            let held = try await ApprovalTests.post(
                hub, ApprovalTests.alert("Snow day"), as: Self.ann,
                expect: .accepted)
            #expect(held[path: "approval.reasons"] == ["forced_subject"])
            let requested = try #require(held[path: "approval.requested_at"]?.int64Value)
            #expect(held[path: "approval.expires_at"]?.int64Value == requested + 600_000)
            let entry = try await AuditReading.first(hub.database, action: "settings.approval")
            #expect(entry?[path: "actor.name"]?.stringValue == "admin-script")
            #expect(entry?[path: "change.after.defaults"]?.boolValue == true)
            #expect(entry?[path: "change.before.defaults"]?.boolValue == false)
        }
    }

    @Test func rulesStoredByAnotherReplicaHoldHereWithinASecondAndLaterStartsKeepThem() async throws {
        try await Self.withDefaultDeployment { hub, fake in
            // Another replica (its own services over the same database) turns the rules on.
            let replica = HubServices(
                pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4,
                approval: ApprovalPolicy(defaults: true))
            try await replica.loadCopies()
            // Its environment seeds nothing over what is stored.
            #expect(try await !replica.approvals.settings().defaults)
            let admin = Identity(name: "root", role: .admin, kind: .user)
            try await replica.approvals.updateSettings(ApprovalPolicy(defaults: true), as: admin)
            try await eventually("this hub holds a Forced subject's message", within: .seconds(5)) {
                let response = try await hub.request(
                    .post, "/message", as: Self.ann,
                    json: ApprovalTests.alert("Probe"))
                return response.status == .accepted
            }
        }
    }

    @Test func aHeldMessageIsCorrectedOnlyByItsAuthorAndTheApprovalStartsAgainOnTheNewText() async throws {
        try await ApprovalTests.with { hub, fake in
            let held = try await ApprovalTests.post(
                hub, ApprovalTests.alert("Snow dya"), as: Self.ann,
                expect: .accepted)
            let key = try ApprovalTests.key(held)
            #expect(held[path: "approval.version"]?.int64Value == 1)
            // An admin may correct others' messages, but not one awaiting approval: the approver would approve unseen.
            let admin = try await hub.request(.put, "/message/\(key.hex)", as: .admin, json: #"{"title": "Party"}"#)
            #expect(admin.status == .conflict && admin.errorCode == "approval_pending", "\(admin.text)")
            // Its author corrects it: 202, version 2, and it still waits.
            let corrected = try await hub.request(
                .put, "/message/\(key.hex)", as: Self.ann,
                json: #"{"title": "Snow day"}"#)
            #expect(corrected.status == .accepted, "\(corrected.text)")
            let body = try corrected.json()
            #expect(body["title"] == "Snow day" && body[path: "approval.version"]?.int64Value == 2)
            #expect(body[path: "relay.state"] == "awaiting_approval")
            // An approval of the text bob read before the correction is refused; of the current one it lands.
            let stale = try await hub.request(.post, "/message/\(key.hex)/approve", as: Self.bob, json: Self.version(1))
            #expect(stale.status == .conflict && stale.errorCode == "approval_stale", "\(stale.text)")
            let unnamed = try await hub.request(.post, "/message/\(key.hex)/approve", as: Self.bob)
            #expect(unnamed.status == .unprocessableContent && unnamed.errorCode == "version_required")
            #expect(Self.requests(fake, key).isEmpty)
            var ifMatch = HTTPFields()
            ifMatch[.ifMatch] = #""2""#
            ifMatch[.authorization] = "Basic \(Data("bob:\(ApprovalTests.bobPassword)".utf8).base64EncodedString())"
            let approved = try await hub.client.execute(
                uri: "/message/\(key.hex)/approve", method: .post,
                headers: ifMatch)
            #expect(approved.status == .ok, "\(approved.text)")
            try await eventually { Self.requests(fake, key).count == 2 }
            // What goes out is the approved text, in the notification and in the data.
            let sent = Self.requests(fake, key)
            #expect(sent.allSatisfy { !String(decoding: $0.body, as: UTF8.self).contains("Snow dya") })
            #expect(sent.contains { ($0.message["notification"] as? [String: Any])?["title"] as? String == "Snow day" })
        }
    }

    @Test func aCorrectionOfAnApprovedMessageNeedsASecondPersonBeforeAnyPhoneSeesIt() async throws {
        try await ApprovalTests.with { hub, fake in
            let held = try await ApprovalTests.post(hub, ApprovalTests.alert("Closed"), as: Self.ann, expect: .accepted)
            let key = try ApprovalTests.key(held)
            #expect(
                try await hub.request(
                    .post, "/message/\(key.hex)/approve", as: Self.bob,
                    json: Self.version(1)
                ).status == .ok)
            try await eventually { try await hub.relayState(key) == "sent" }
            let sentCount = Self.requests(fake, key).count

            // The bypass: once approved, a correction replaced the text on every phone. Now it waits.
            let correction = try await hub.request(
                .put, "/message/\(key.hex)", as: Self.ann,
                json: #"{"title": "Free pizza", "desc": "Come at once"}"#)
            #expect(correction.status == .accepted, "\(correction.text)")
            let waiting = try correction.json()
            #expect(waiting["title"] == "Closed" && waiting[path: "pending_correction.fields.title"] == "Free pizza")
            #expect(waiting[path: "approval.version"]?.int64Value == 2)
            // Nobody else sees what waits: the public view has the approved text only.
            let publicView = try await hub.request(.get, "/message/\(key.hex)").json()
            #expect(publicView["title"] == "Closed" && publicView["pending_correction"] == nil)
            // The approvers list it; its author may not approve it, even as an admin token they own.
            let listed = try await hub.request(.get, "/approvals", as: Self.bob).json()
            #expect(
                listed["awaiting"]?.arrayValue?.compactMap { $0.documentValue?["msi_key"]?.stringValue } == [key.hex])
            let own = try await hub.request(.post, "/message/\(key.hex)/approve", as: Self.ann, json: Self.version(2))
            #expect(own.status == .forbidden && own.errorCode == "approval_self")
            try await ApprovalTests.sendOrdinary(hub, fake, title: "Books")
            #expect(Self.requests(fake, key).count == sentCount)

            let approved = try await hub.request(
                .post, "/message/\(key.hex)/approve", as: Self.bob,
                json: Self.version(2))
            #expect(approved.status == .ok, "\(approved.text)")
            try await eventually("the correction reached FCM") {
                Self.requests(fake, key).contains { $0.data["correction"] == "1" && $0.data["title"] == "Free pizza" }
            }
            let stored = try await hub.request(.get, "/message/\(key.hex)", as: Self.ann).json()
            #expect(stored["title"] == "Free pizza" && stored["pending_correction"] == nil)
            #expect(stored["corrections"]?.arrayValue?.first?.documentValue?["approved_by"] == "bob")
        }
    }

    @Test func aTokenIsItsOwnersForTheAuthorRule() async throws {
        try await ApprovalTests.with { hub, fake in
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            let secret = try await services.accounts.createToken(name: "anns-script", role: .communicator, owner: "ann")
            await #expect(throws: AccountRefusal.self) {
                _ = try await services.accounts.createToken(name: "ghosts-script", role: .communicator, owner: "ghost")
            }
            let held = try await ApprovalTests.post(
                hub, ApprovalTests.alert("Through a token"), as: .token(secret),
                expect: .accepted)
            #expect(held[path: "approval.author"] == "ann" && held["sender"] == "anns-script")
            let key = try ApprovalTests.key(held)
            let own = try await hub.request(.post, "/message/\(key.hex)/approve", as: Self.ann, json: Self.version(1))
            #expect(own.status == .forbidden && own.errorCode == "approval_self", "\(own.text)")
            #expect(
                try await hub.request(
                    .post, "/message/\(key.hex)/approve", as: Self.bob,
                    json: Self.version(1)
                ).status == .ok)
        }
    }

    @Test func theAudienceIsCountedWholeAndAtTheUrgencyEscalationReaches() async throws {
        try await ApprovalTests.with(policy: ApprovalPolicy(groupSize: 5, defaults: true)) { hub, fake in
            // Three groups of two and one person named directly: none above 5 alone, 7 together.
            for index in 1...3 {
                let roster = try GroupRoutesTests.roster(
                    "g\(index)", ["p\(index)a", "p\(index)b"],
                    access: ["bulletin-bot"])
                #expect(try await hub.request(.put, "/group/g\(index)", as: .admin, json: roster).status == .created)
            }
            func to(_ groups: [String], persons: [String] = [], extra: String = "") -> String {
                let names = groups.map { "\"\($0)\"" }.joined(separator: ", ")
                let people = persons.map { "\"\($0)\"" }.joined(separator: ", ")
                return
                    #"{"title": "Trip", "desc": "", "message": "The trip leaves at 8.", "to": {"groups": [\#(names)], "persons": [\#(people)]}, "distribution": "Information"\#(extra)}"#
            }
            _ = try await ApprovalTests.post(hub, to(["g1", "g2"]), as: .admin, expect: .created)
            let summed = try await ApprovalTests.post(hub, to(["g1", "g2", "g3"]), as: .admin, expect: .accepted)
            #expect(summed[path: "approval.reasons"] == ["large_group"])
            let withPersons = try await ApprovalTests.post(
                hub, to(["g1", "g2"], persons: ["x"]), as: .admin,
                expect: .created)
            #expect(withPersons["approval"] == nil)
            let six = try await ApprovalTests.post(
                hub, to(["g1", "g2"], persons: ["x", "y"]), as: .admin,
                expect: .accepted)
            #expect(six[path: "approval.reasons"] == ["large_group"])

            // A time-sensitive message to a subject nobody marked goes at once, unless its re-sends become critical.
            let plain = #", "urgency": "time-sensitive""#
            _ = try await ApprovalTests.post(
                hub, RelayOutboxTests.information("Soon", extra: plain), as: .communicator,
                expect: .created)
            let escalating = try await ApprovalTests.post(
                hub, RelayOutboxTests.information("Soon", extra: plain + #", "ack": {"within_s": 60, "resend": 1}"#),
                as: .communicator, expect: .accepted)
            #expect(escalating[path: "approval.reasons"] == ["critical"])
            _ = try await ApprovalTests.post(
                hub, RelayOutboxTests.information("Soon", extra: plain + #", "ack": {"within_s": 60, "resend": 0}"#),
                as: .communicator, expect: .created)
        }
    }

    @Test func anAdminTurnsTheRulesOnInThePortalsSettingsPage() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var admin = PortalBrowser(hub: hub)
            _ = try await admin.login("root", PortalTests.adminPassword)
            let page = try await admin.get("/portal/admin/settings")
            #expect(
                page.status == .ok && page.text.contains("id=\"approval-defaults\"") && !page.text.contains("checked"))
            let csrf = try PortalBrowser.csrf(in: page)
            // Without the CSRF token nothing changes; out of range is 422 with the field named.
            #expect(
                try await admin.post(
                    "/portal/admin/settings/approval",
                    [
                        "defaults": "on", "group_size": "50",
                        "timeout_minutes": "30",
                    ]
                ).status == .forbidden)
            let bad = try await admin.post(
                "/portal/admin/settings/approval",
                [
                    "_csrf": csrf, "defaults": "on", "group_size": "0", "timeout_minutes": "30",
                ])
            #expect(bad.status == .unprocessableContent && bad.text.contains("1 to 10,000,000"))
            #expect(try await hub.request(.get, "/settings/approval", as: .admin).json()["defaults"] == false)
            let saved = try await admin.post(
                "/portal/admin/settings/approval",
                [
                    "_csrf": csrf, "defaults": "on", "group_size": "50", "timeout_minutes": "30",
                ])
            #expect(saved.status == .seeOther)
            #expect(
                try await hub.request(.get, "/settings/approval", as: .admin).json()
                    == ["defaults": true, "group_size": 50, "timeout_seconds": 1800])
            #expect(try await admin.get("/portal/admin/settings").text.contains("checked"))
            // A communicator may not see the page.
            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            #expect(try await ann.get("/portal/admin/settings").status == .forbidden)
        }
    }
}
