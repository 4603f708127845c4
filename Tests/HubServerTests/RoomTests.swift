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

/// Rooms: groups whose members post from their devices (`posting: members`), against the real hub, relay and fake
/// FCM: every other member's devices get a post once and the author's never; a room's messages share its thread on
/// the wire; who may post, read, manage, leave and withdraw; the per-person rate limit; staff sends that leave
/// persons out.
@Suite("Rooms: members posting through the hub")
struct RoomTests {
    typealias Handset = ReceiptTests.Handset

    /// Ann (a phone and a tablet) and Ben are in the chess room, which Ann manages and members may leave; Cid is in
    /// no room; the notices group lets staff alone post.
    static let annPhone = Handset("room-ann-phone", person: "ann")
    static let annTablet = Handset("room-ann-tablet", person: "ann", platform: .ios)
    static let benPhone = Handset("room-ben-phone", person: "ben", platform: .ios)
    static let cidPhone = Handset("room-cid-phone", person: "cid")

    static let seed: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await ReceiptTests.seed([annPhone, annTablet, benPhone, cidPhone], in: database)
        let groups = GroupDAO(database: database)
        _ = try await groups.replace(
            id: "chess", name: "Chess team", access: [], persons: ["ann", "ben"],
            room: Group.RoomSettings(posting: .members, managers: ["ann"], selfLeave: true))
        _ = try await groups.replace(id: "notices", name: "Notices", access: [], persons: ["ann", "ben"])
    }

    /// POSTs `text` to room `group` from `handset`.
    static func post(_ text: String, to group: String = "chess", from handset: Handset, on hub: HubHarness)
        async throws -> TestResponse
    {
        try await hub.request(
            .post, "/group/\(group)/messages", as: .token(handset.secret),
            json: #"{"message": "\#(text)", "data": {"board": "3"}}"#)
    }

    /// The message `key` as stored.
    static func stored(_ key: String, in database: MongoDatabase) async throws -> Message {
        let id = try #require(ObjectID(hex: key))
        return try await MessageDAO(database: database).get(msiKey: id)
    }

    @Test func aPostReachesEveryOtherMembersDevicesOnceInTheRoomsThreadAndTheAuthorsNever() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: Self.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let response = try await Self.post("Board 3 is free", from: Self.annPhone, on: hub)
                #expect(response.status == .created, "\(response.text)")
                let body = try response.json()
                #expect(body["sender"] == ["person": "ann"])
                #expect(body["room"] == "chess")
                #expect(body["title"] == "Chess team")
                let key = try #require(body["msi_key"]?.stringValue)
                try await FanOutTests.waitUntilSent(try await Self.stored(key, in: hub.database), in: hub.database)
                let toBen = AcknowledgementTests.requests(to: Self.benPhone.token, fake)
                #expect(toBen.count == 1)  // an Alert by token: the pop-up and the data in one request
                let popUp = try #require(toBen.first { $0["notification"] != nil })
                let apns = try #require(popUp["apns"] as? [String: Any])
                let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
                #expect(aps?["thread-id"] as? String == "chess")
                #expect((apns["headers"] as? [String: String])?["apns-collapse-id"] == "chess")
                for request in toBen {
                    let data = request["data"] as? [String: String]
                    #expect(data?["group"] == "chess" && data?["msi_key"] == key)
                }
                // The author's own phone and tablet, and the outsider, got nothing.
                for handset in [Self.annPhone, Self.annTablet, Self.cidPhone] {
                    #expect(AcknowledgementTests.requests(to: handset.token, fake).isEmpty, "\(handset.token)")
                }

                // The room's history: members' devices and admins; never others.
                let history = try await hub.request(
                    .get, "/group/chess/messages", as: .token(Self.benPhone.secret))
                #expect(history.status == .ok, "\(history.text)")
                #expect(
                    try history.json()["messages"]?.arrayValue?.compactMap { $0.documentValue?["msi_key"] }
                        == [.string(key)])
                #expect(try await hub.request(.get, "/group/chess/messages", as: .admin).status == .ok)
                let outsider = try await hub.request(
                    .get, "/group/chess/messages", as: .token(Self.cidPhone.secret))
                #expect(outsider.status == .forbidden && outsider.errorCode == "not_a_member")
                #expect(try await hub.request(.get, "/group/chess/messages", as: .communicator).status == .forbidden)

                // Catch-up: Ben's phone has the post; the author's phone does not get it again.
                let benCatchUp = try await hub.request(
                    .get, "/device/\(Self.benPhone.id.hex)/messages", as: .token(Self.benPhone.secret)
                ).json()
                #expect(
                    benCatchUp["messages"]?.arrayValue?.contains { $0.documentValue?["msi_key"] == .string(key) }
                        == true)
                let annCatchUp = try await hub.request(
                    .get, "/device/\(Self.annPhone.id.hex)/messages", as: .token(Self.annPhone.secret)
                ).json()
                #expect(
                    annCatchUp["messages"]?.arrayValue?.contains { $0.documentValue?["msi_key"] == .string(key) }
                        == false)

                // A staff send to the room that leaves Ben out: Ann's devices get it, Ben's never.
                let staff = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Tournament", "desc": "Saturday", "message": "The tournament is on Saturday.",
                         "distribution": "Alert", "to": {"groups": ["chess"], "except": {"persons": ["ben"]}}}
                        """#)
                #expect(staff.status == .created, "\(staff.text)")
                #expect(try staff.json()[path: "to.except.persons"] == ["ben"])
                try await FanOutTests.waitUntilSent(
                    try await Self.stored(try #require(try staff.json()["msi_key"]?.stringValue), in: hub.database),
                    in: hub.database)
                #expect(AcknowledgementTests.requests(to: Self.annPhone.token, fake).count == 1)
                #expect(AcknowledgementTests.requests(to: Self.benPhone.token, fake).count == 1)
                // Staff messages keep their own tag: one notification each.
                let staffPopUp = try #require(
                    AcknowledgementTests.requests(to: Self.annPhone.token, fake).first { $0["notification"] != nil })
                let tag = ((staffPopUp["android"] as? [String: Any])?["notification"] as? [String: Any])?["tag"]
                #expect(tag as? String == (try staff.json()["msi_key"]?.stringValue))
            }
        }
    }

    @Test func aPostIsSentFromMemoryByItsHubAndATakeoverSendsOnlyTheDevicesNotAnswered() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: Self.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                try await hub.waitForRelayRecord()
                // Stored by the hub that sends it: named in its insert (no claim), noted as resolving from the start.
                let response = try await Self.post("Board 4 is free", from: Self.annPhone, on: hub)
                #expect(response.status == .created, "\(response.text)")
                let post = try await Self.stored(
                    try #require(try response.json()["msi_key"]?.stringValue), in: hub.database)
                #expect(post.document[path: "relay.state"] == "direct")
                #expect(post.document[path: "relay.attempts"]?.int64Value == 1)
                #expect(post.document[path: "relay.components.devices.resolving"] == true)
                try await FanOutTests.waitUntilSent(post, in: hub.database)
                #expect(AcknowledgementTests.requests(to: Self.benPhone.token, fake).count == 1)
                // Sent with no write to the message: its one device's delivery record is what its report counts.
                let sent = try await Self.stored(post.msiKey.hex, in: hub.database)
                #expect(sent.document[path: "relay.state"] == "direct")
                #expect(sent.document[path: "relay.attempts"]?.int64Value == 1)
                #expect(sent.document[path: "relay.components.devices.devices"] == nil)
                let report = try await hub.request(.get, "/message/\(post.msiKey.hex)/deliveries", as: .admin).json()
                #expect(report[path: "counts.sent"]?.int64Value == 1)
                #expect(report[path: "counts.pending"]?.int64Value == 0)

                // A hub that died while sending Ben's post: its record ran out, Ann's phone had its answer. The live
                // hub takes the record over and sends the post to Ann's tablet only.
                let now = UnixTime.nowMilliseconds()
                let dead = DirectRelay(owner: "dead-hub/1", seq: 1)
                let plan = RelayPlan(dueAt: now, deadlineAt: now + 3_600_000, direct: dead, addressed: true)
                var draft = MessageDraft(
                    title: "Chess team", desc: "Board 5", message: "Board 5", topicKey: "",
                    recipients: Recipients(groups: ["chess"], exceptPersons: ["ben"]), distribution: .alert,
                    sender: "", extra: ["relay": .document(plan.document(for: .alert))])
                draft.roomPost = ("ben", "chess")
                let orphan = try await MessageDAO(database: hub.database).add(draft)
                try await DeliveryDAO(database: hub.database).record([
                    DeliveryOutcome(
                        Delivery(
                            message: orphan.id, device: Self.annPhone.id, person: "ann", group: "chess",
                            platform: .android, registration: Self.annPhone.token), state: .sent)
                ])
                #expect(
                    try await RelayProgressDAO(database: hub.database).report(
                        owner: dead.owner, through: 0, since: now - 1_000, until: now - 500, now: now - 1_000))
                try await FanOutTests.waitUntilSent(orphan, in: hub.database)
                let received = fake.received.filter { $0.data["msi_key"] == orphan.msiKey.hex }
                #expect(received.compactMap { $0.message["token"] as? String } == [Self.annTablet.token])
            }
        }
    }

    @Test func whoMayPostIsTheRoomsRuleAndARefusedPostStoresNothing() async throws {
        var devices = DeviceConfiguration()
        devices.roomPostsPerMinute = 2
        try await HubHarness.with(seed: Self.seed, devices: devices) { hub in
            let before = try await hub.database.collection(CollectionName.message).countDocuments()
            let outsider = try await Self.post("Hello", from: Self.cidPhone, on: hub)
            #expect(outsider.status == .forbidden && outsider.errorCode == "not_a_member")
            let staffOnly = try await Self.post("Hello", to: "notices", from: Self.annPhone, on: hub)
            #expect(staffOnly.status == .forbidden && staffOnly.errorCode == "posting_not_allowed")
            let anonymous = try await hub.request(.post, "/group/chess/messages", json: #"{"message": "Hi"}"#)
            #expect(anonymous.status == .unauthorized)
            let wrongSecret = try await hub.request(
                .post, "/group/chess/messages", as: .token("msd_not-a-secret-of-anyone"),
                json: #"{"message": "Hi"}"#)
            #expect(wrongSecret.status == .unauthorized)
            let empty = try await hub.request(
                .post, "/group/chess/messages", as: .token(Self.annPhone.secret), json: #"{"message": ""}"#)
            #expect(empty.status == .unprocessableContent)
            let badData = try await hub.request(
                .post, "/group/chess/messages", as: .token(Self.annPhone.secret),
                json: #"{"message": "Hi", "data": {"msi_key": "x"}}"#)
            #expect(badData.status == .unprocessableContent && badData.errorCode == "invalid_data")
            let missing = try await Self.post("Hello", to: "nope", from: Self.annPhone, on: hub)
            #expect(missing.status == .notFound && missing.errorCode == "group_not_found")
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == before)

            // Two posts a minute, all of the person's devices together: the third is 429 with Retry-After.
            let intoMinute = UnixTime.nowMilliseconds() % 60_000
            if intoMinute > 50_000 { try await Task.sleep(for: .milliseconds(60_500 - intoMinute)) }
            #expect(try await Self.post("One", from: Self.annPhone, on: hub).status == .created)
            let two = try await Self.post("Two", from: Self.annTablet, on: hub)
            #expect(two.status == .created, "\(two.text)")
            let third = try await Self.post("Three", from: Self.annPhone, on: hub)
            #expect(third.status == .tooManyRequests)
            let retryAfter = try #require(third.headers[.retryAfter].flatMap { Int($0) })
            #expect((1...60).contains(retryAfter))
            // Another person has their own allowance.
            #expect(try await Self.post("Mine", from: Self.benPhone, on: hub).status == .created)
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == before + 3)
        }
    }

    @Test func managersRunTheRoomFromTheirDevicesAndMembersLeaveWhereTheRoomLetsThem() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            // Ann manages: she adds Dan from her phone; Ben, a member, may not.
            let added = try await hub.request(.put, "/group/chess/members/dan", as: .token(Self.annPhone.secret))
            #expect(added.status == .created, "\(added.text)")
            #expect(try added.json()["member_count"] == 3)
            let byMember = try await hub.request(.put, "/group/chess/members/eve", as: .token(Self.benPhone.secret))
            #expect(byMember.status == .forbidden && byMember.errorCode == "not_a_manager")
            let removeOther = try await hub.request(
                .delete, "/group/chess/members/dan", as: .token(Self.benPhone.secret))
            #expect(removeOther.status == .forbidden && removeOther.errorCode == "not_a_manager")
            // A communicator is not an admin.
            #expect(try await hub.request(.put, "/group/chess/members/eve", as: .communicator).status == .forbidden)

            // Ben's post, withdrawn by Ann (a manager); Cid, neither its author nor a manager, may not.
            let post = try await Self.post("Wrong room, sorry", from: Self.benPhone, on: hub)
            let key = try #require(try post.json()["msi_key"]?.stringValue)
            let byOutsider = try await hub.request(
                .delete, "/group/chess/messages/\(key)", as: .token(Self.cidPhone.secret))
            #expect(byOutsider.status == .forbidden)
            let withdrawn = try await hub.request(
                .delete, "/group/chess/messages/\(key)?reason=duplicate", as: .token(Self.annPhone.secret))
            #expect(withdrawn.status == .ok, "\(withdrawn.text)")
            #expect(try withdrawn.json()[path: "withdrawn.reason"] == "duplicate")
            // Not a post of another room.
            let elsewhere = try await hub.request(
                .delete, "/group/notices/messages/\(key)", as: .token(Self.annPhone.secret))
            #expect(elsewhere.status == .notFound)

            // Ben leaves the chess room himself; the notices group does not let him.
            #expect(
                try await hub.request(.delete, "/group/chess/members/ben", as: .token(Self.benPhone.secret)).status
                    == .noContent)
            let stay = try await hub.request(.delete, "/group/notices/members/ben", as: .token(Self.benPhone.secret))
            #expect(stay.status == .forbidden && stay.errorCode == "leave_not_allowed")
            // Gone from the room: no more posts from him.
            let after = try await Self.post("Back?", from: Self.benPhone, on: hub)
            #expect(after.status == .forbidden && after.errorCode == "not_a_member")
            // Admins still manage every group.
            #expect(try await hub.request(.put, "/group/notices/members/dan", as: .admin).status == .created)
            #expect(try await hub.request(.delete, "/group/notices/members/dan", as: .admin).status == .noContent)

            // The room's settings are the group's, shown and changed by PUT /group (left out: kept).
            let group = try await hub.request(.get, "/group/chess", as: .admin).json()
            #expect(group["posting"] == "members" && group["managers"] == ["ann"] && group["self_leave"] == true)
            let synced = try await hub.request(
                .put, "/group/chess", as: .admin, json: #"{"name": "Chess team", "members": ["ann", "ben"]}"#)
            #expect(try synced.json()["posting"] == "members")
            let closed = try await hub.request(
                .put, "/group/chess", as: .admin,
                json: #"{"name": "Chess team", "members": ["ann"], "posting": "staff", "self_leave": false}"#)
            #expect(try closed.json()["posting"] == "staff" && (try closed.json()["self_leave"]) == false)
            let invalid = try await hub.request(
                .put, "/group/chess", as: .admin,
                json: #"{"name": "Chess team", "members": ["ann"], "posting": "everyone"}"#)
            #expect(invalid.status == .unprocessableContent && invalid.errorCode == "invalid_field")
        }
    }

    @Test func aMuteFollowsThePersonToEveryDeviceAndTheRoomArrivesInTheBackgroundButUrgentMessagesSound() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: Self.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                // Ann mutes the room from her phone; her tablet lists it.
                let muted = try await hub.request(
                    .put, "/device/\(Self.annPhone.id.hex)/person/mutes/chess", as: .token(Self.annPhone.secret),
                    json: #"{"until": null}"#)
                #expect(muted.status == .ok, "\(muted.text)")
                let listed = try await hub.request(
                    .get, "/device/\(Self.annTablet.id.hex)/person/mutes", as: .token(Self.annTablet.secret)
                ).json()
                #expect(listed["mutes"] == [["group": "chess", "until": .null]])
                // Refusals: a time past, a group that is not, a device bound to nobody.
                let past = try await hub.request(
                    .put, "/device/\(Self.annPhone.id.hex)/person/mutes/chess", as: .token(Self.annPhone.secret),
                    json: #"{"until": 1000}"#)
                #expect(past.status == .unprocessableContent)
                let unknown = try await hub.request(
                    .put, "/device/\(Self.annPhone.id.hex)/person/mutes/nope", as: .token(Self.annPhone.secret),
                    json: #"{"until": null}"#)
                #expect(unknown.status == .notFound)

                // Ben posts: Ann's phone and tablet get it in the background, no pop-up, "muted": "1".
                let post = try await Self.post("Quiet please", from: Self.benPhone, on: hub)
                let key = try #require(try post.json()["msi_key"]?.stringValue)
                try await FanOutTests.waitUntilSent(try await Self.stored(key, in: hub.database), in: hub.database)
                for handset in [Self.annPhone, Self.annTablet] {
                    let requests = AcknowledgementTests.requests(to: handset.token, fake)
                    #expect(requests.count == 1, "\(handset.token)")
                    #expect(requests.first?["notification"] == nil)
                    let data = requests.first?["data"] as? [String: String]
                    #expect(data?["muted"] == "1" && data?["msi_key"] == key)
                    let apns = requests.first?["apns"] as? [String: Any]
                    #expect((apns?["headers"] as? [String: String])?["apns-push-type"] == "background")
                }
                // A time-sensitive staff message to the room sounds all the same.
                let urgent = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Room change", "desc": "Now in room 4", "message": "The club meets in room 4.",
                         "distribution": "Alert", "urgency": "time-sensitive", "to": {"groups": ["chess"]}}
                        """#)
                let urgentKey = try #require(try urgent.json()["msi_key"]?.stringValue)
                try await FanOutTests.waitUntilSent(
                    try await Self.stored(urgentKey, in: hub.database), in: hub.database)
                let urgentToAnn = AcknowledgementTests.requests(to: Self.annPhone.token, fake).filter {
                    ($0["data"] as? [String: String])?["msi_key"] == urgentKey
                }
                #expect(urgentToAnn.count == 1 && urgentToAnn.first?["notification"] != nil)
                #expect((urgentToAnn.first?["data"] as? [String: String])?["muted"] == nil)

                // Unmuted: the next post pops up again.
                #expect(
                    try await hub.request(
                        .delete, "/device/\(Self.annTablet.id.hex)/person/mutes/chess",
                        as: .token(Self.annTablet.secret)
                    ).status == .noContent)
                let again = try await Self.post("Back to normal", from: Self.benPhone, on: hub)
                let againKey = try #require(try again.json()["msi_key"]?.stringValue)
                try await FanOutTests.waitUntilSent(try await Self.stored(againKey, in: hub.database), in: hub.database)
                let againToAnn = AcknowledgementTests.requests(to: Self.annPhone.token, fake).filter {
                    ($0["data"] as? [String: String])?["msi_key"] == againKey
                }
                #expect(againToAnn.count == 1 && againToAnn.first?["notification"] != nil)
            }
        }
    }

    /// GET /device/:deviceID/unread as `handset`: (total, per group).
    static func unread(of handset: Handset, on hub: HubHarness) async throws -> (Int64?, BSONValue?) {
        let body = try await hub.request(
            .get, "/device/\(handset.id.hex)/unread", as: .token(handset.secret)
        ).json()
        return (body["total"]?.int64Value, body["groups"])
    }

    @Test func unreadCountsRideEachSendAndAReadOnOneDeviceClearsTheOthers() async throws {
        var devices = DeviceConfiguration()
        devices.countsUnread = true
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: Self.seed, relay: try FanOutTests.relay(to: fake), devices: devices) {
                hub in
                var keys: [String] = []
                for text in ["First move", "Second move"] {
                    let post = try await Self.post(text, from: Self.benPhone, on: hub)
                    let key = try #require(try post.json()["msi_key"]?.stringValue)
                    try await FanOutTests.waitUntilSent(try await Self.stored(key, in: hub.database), in: hub.database)
                    keys.append(key)
                }
                // Each send to Ann carries her count, as the badge too; the second says two are new in the room.
                let toAnn = AcknowledgementTests.requests(to: Self.annTablet.token, fake)
                #expect(toAnn.map { ($0["data"] as? [String: String])?["unread"] } == ["1", "2"])
                let badges = toAnn.map {
                    (((($0["apns"] as? [String: Any])?["payload"] as? [String: Any])?["aps"] as? [String: Any])?[
                        "badge"]
                        as? Int)
                }
                #expect(badges == [1, 2])
                let bodies = toAnn.map { ($0["notification"] as? [String: Any])?["body"] as? String }
                #expect(bodies == ["First move", "2 new messages in Chess team"])
                let (total, groups) = try await Self.unread(of: Self.annPhone, on: hub)
                #expect(total == 2 && groups == ["chess": 2])
                // The author counts nothing of their own.
                #expect(try await Self.unread(of: Self.benPhone, on: hub).0 == 0)

                // Ann reads the first on her phone: her count falls, her tablet is told in the background.
                let results = try await ReceiptTests.post(
                    [ReceiptTests.entry(keys[0], "read", at: UnixTime.nowMilliseconds())], as: Self.annPhone, on: hub)
                #expect(results.map(\.status) == ["stored"])
                #expect(try await Self.unread(of: Self.annTablet, on: hub).0 == 1)
                try await eventually("the tablet is told of the read") {
                    AcknowledgementTests.requests(to: Self.annTablet.token, fake).contains {
                        ($0["data"] as? [String: String])?["read"] == "1"
                    }
                }
                let notice = try #require(
                    AcknowledgementTests.requests(to: Self.annTablet.token, fake).first {
                        ($0["data"] as? [String: String])?["read"] == "1"
                    })
                #expect(notice["notification"] == nil)
                #expect((notice["data"] as? [String: String]) == ["msi_key": keys[0], "read": "1", "unread": "1"])
                #expect(
                    !AcknowledgementTests.requests(to: Self.annPhone.token, fake).contains {
                        ($0["data"] as? [String: String])?["read"] == "1"
                    })
                // Opening it on the tablet later lowers nothing more and tells nobody again.
                _ = try await ReceiptTests.post(
                    [ReceiptTests.entry(keys[0], "opened", at: UnixTime.nowMilliseconds())], as: Self.annTablet,
                    on: hub)
                #expect(try await Self.unread(of: Self.annPhone, on: hub).0 == 1)
                try await Task.sleep(for: .milliseconds(500))
                let readNoticesToPhone = AcknowledgementTests.requests(to: Self.annPhone.token, fake).filter {
                    ($0["data"] as? [String: String])?["read"] == "1"
                }
                #expect(readNoticesToPhone.isEmpty)
            }
        }
    }
}

extension RoomTests {
    @Test func withoutUnreadCountsNoSendCarriesACountAndAReadTellsNobody() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: Self.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let post = try await Self.post("First move", from: Self.benPhone, on: hub)
                let key = try #require(try post.json()["msi_key"]?.stringValue)
                try await FanOutTests.waitUntilSent(try await Self.stored(key, in: hub.database), in: hub.database)
                let toAnn = try #require(AcknowledgementTests.requests(to: Self.annTablet.token, fake).first)
                #expect((toAnn["data"] as? [String: String])?["unread"] == nil)
                let aps = ((toAnn["apns"] as? [String: Any])?["payload"] as? [String: Any])?["aps"] as? [String: Any]
                #expect(aps?["badge"] == nil)
                _ = try await ReceiptTests.post(
                    [ReceiptTests.entry(key, "read", at: UnixTime.nowMilliseconds())], as: Self.annPhone, on: hub)
                try await Task.sleep(for: .milliseconds(500))
                #expect(AcknowledgementTests.requests(to: Self.annTablet.token, fake).count == 1)
                #expect(try await Self.unread(of: Self.annPhone, on: hub).0 == 0)
                #expect(try await hub.database.collection(CollectionName.personUnread).countDocuments() == 0)
            }
        }
    }
}

extension RoomTests {
    @Test func aMessageToTwoGroupsOfAPersonCountsOnceAndOneLeavingThemOutCountsNothing() async throws {
        var devices = DeviceConfiguration()
        devices.countsUnread = true
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: Self.seed, relay: try FanOutTests.relay(to: fake), devices: devices) {
                hub in
                // Ann and Ben are in both groups: one message to both counts once for each.
                let both = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Hall", "desc": "Closed", "message": "The hall is closed today.",
                         "distribution": "Alert", "to": {"groups": ["chess", "notices"]}}
                        """#)
                #expect(both.status == .created, "\(both.text)")
                let bothKey = try #require(try both.json()["msi_key"]?.stringValue)
                try await FanOutTests.waitUntilSent(try await Self.stored(bothKey, in: hub.database), in: hub.database)
                #expect(try await Self.unread(of: Self.annPhone, on: hub).0 == 1)
                #expect(try await Self.unread(of: Self.benPhone, on: hub).0 == 1)
                // A second message to both that leaves Ben out: Ann counts two, Ben still one.
                let leavingBenOut = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Hall", "desc": "Open", "message": "The hall is open again.",
                         "distribution": "Alert", "to": {"groups": ["chess", "notices"], "except": {"persons": ["ben"]}}}
                        """#)
                let secondKey = try #require(try leavingBenOut.json()["msi_key"]?.stringValue)
                try await FanOutTests.waitUntilSent(
                    try await Self.stored(secondKey, in: hub.database), in: hub.database)
                let (annTotal, annGroups) = try await Self.unread(of: Self.annTablet, on: hub)
                #expect(annTotal == 2 && annGroups == ["chess": 2])
                #expect(try await Self.unread(of: Self.benPhone, on: hub).0 == 1)
                // Read once, on either device: the count falls by one in all.
                _ = try await ReceiptTests.post(
                    [ReceiptTests.entry(bothKey, "opened", at: UnixTime.nowMilliseconds())], as: Self.annTablet,
                    on: hub)
                #expect(try await Self.unread(of: Self.annPhone, on: hub).0 == 1)
                _ = try await ReceiptTests.post(
                    [ReceiptTests.entry(bothKey, "read", at: UnixTime.nowMilliseconds())], as: Self.benPhone, on: hub)
                #expect(try await Self.unread(of: Self.benPhone, on: hub).0 == 0)
            }
        }
    }
}
