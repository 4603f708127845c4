import DAO
import FakeFCM
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import MSIKit
import Mongo
import MongoTestSupport
import Testing

/// Every connection between a hub and its database cut at once while the database stays up (a network cut, a
/// firewall's idle timeout): the next POST is stored at once on a new connection, and every worker (the relay's
/// hand-off and outbox, the cube's follower, the subscriptions' reconciler) works again by itself.
@Suite("The database's connections cut under the hub", .tags(.faults))
struct ConnectionCutTests {
    @Test func theNextPostAndEveryWorkerRecoverByThemselves() async throws {
        let cutter = try await ConnectionCutter(to: try TestDatabase.uri())
        try await FakeFCM.with { fake in
            try await LiveHub.with(fake: fake, through: cutter) { hub in
                // Everything works, and every kind of connection is open: pooled commands and the follower's stream.
                let first = try await hub.send(SchoolCube.closures, title: "Before the cut")
                try await eventually("the first message at FCM") {
                    fake.received.contains { $0.data["msi_key"] == first }
                }

                try await cutter.cut()
                let clock = ContinuousClock()
                let cutAt = clock.now

                // The next POST: stored at once (a write on a dead connection is retried on a new one), and relayed.
                let (status, body) = try await hub.request(
                    "POST", "message",
                    [
                        "title": "After the cut", "desc": "Stored", "message": "On a new connection.",
                        "topic_key": SchoolCube.closures.topicKey, "distribution": SchoolCube.closures.distribution,
                    ])
                let posted = clock.now - cutAt
                #expect(
                    status == 201, "POST /message after the cut: \(status) \(String(decoding: body, as: UTF8.self))")
                // Not by waiting out the write deadline (5 s) on the dead connection.
                #expect(posted < .seconds(5), "POST /message after the cut took \(posted)")
                let key = try #require(
                    (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["msi_key"] as? String)
                try await eventually("the message after the cut at FCM", within: .seconds(10)) {
                    fake.received.contains { $0.data["msi_key"] == key }
                }
                let relayed = clock.now - cutAt

                // The outbox worker: a message due in a second is claimed and sent.
                let dueAt = Int64(Date().timeIntervalSince1970 * 1000) + 1_000
                let (scheduledStatus, scheduledBody) = try await hub.request(
                    "POST", "message",
                    [
                        "title": "Scheduled after the cut", "desc": "Later", "message": "Due in a second.",
                        "topic_key": SchoolCube.exams.topicKey, "distribution": SchoolCube.exams.distribution,
                        "send_at": dueAt,
                    ])
                #expect(scheduledStatus == 201)
                let scheduled = try #require(
                    (try JSONSerialization.jsonObject(with: scheduledBody) as? [String: Any])?["msi_key"] as? String)

                // The follower: a channel added by another process is served.
                _ = try await ChannelDAO(database: hub.database).add(
                    ChannelDraft(name: "Added after the cut", desc: ""))
                try await eventually("the new channel served", within: .seconds(10)) {
                    let (data, _) = try await URLSession.shared.data(from: hub.url.appendingPathComponent("channel"))
                    return String(decoding: data, as: UTF8.self).contains("Added after the cut")
                }
                let followed = clock.now - cutAt

                // The reconciler: a phone registered now gets its subjects at FCM.
                let phone = try SimulatedPhone(hub: hub.url, fake: fake, token: "after-the-cut")
                try await phone.start()
                try await eventually("the new phone's subscriptions at FCM", within: .seconds(10)) {
                    fake.subscriptions(of: phone.push.registration) == SchoolCube.automatic
                }
                try await eventually("the scheduled message at FCM", within: .seconds(10)) {
                    fake.received.contains { $0.data["msi_key"] == scheduled }
                }
                print(
                    "connections cut: the next POST answered in \(posted), at FCM \(relayed) after the cut; a new "
                        + "channel served \(followed) after it; the outbox and the reconciler worked again")
            }
        }
    }
}
