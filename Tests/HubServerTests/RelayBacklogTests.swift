import DAO
import Foundation
import HubCore
@testable import HubServer
import HubTime
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The bound on the relay's backlog (`RELAY_MAX_BACKLOG_SECONDS`): past it POST /message answers 503 `relay_behind`
/// with `Retry-After` and stores nothing, `/readyz` says so, and messages are taken again once the relay caught up.
/// The hubs here store messages without relaying them (`RELAY_CONCURRENCY=0`), so the backlog is what a test puts
/// in the database: a message waiting in the outbox, or a worker's record of messages it took and has not sent.
@Suite("The relay's backlog bound")
struct RelayBacklogTests {
    /// A hub that relays nothing, with a backlog bound of `maxBacklog`.
    static func relay(maxBacklog: Duration?) -> RelayConfiguration {
        var relay = RelayConfiguration(concurrency: 0)
        relay.maxBacklog = maxBacklog
        return relay
    }

    /// Stores a message due `age` ago and never sent, waiting for a worker.
    static func storeWaiting(age: Duration, in database: MongoDatabase) async throws -> ObjectID {
        let due = UnixTime.nowMilliseconds() - age.milliseconds
        let plan = RelayPlan(dueAt: due, deadlineAt: due + 3_600_000)
        return try await MessageDAO(database: database).add(
            MessageDraft(
                title: "Waiting", desc: "", message: "Not sent yet", topicKey: RelayOutboxTests.booksTopic,
                distribution: .information, sender: "test",
                extra: ["relay": .document(plan.document(for: .information))])
        ).id
    }

    @Test func pastTheBoundAPostIs503WithRetryAfterAndStoresNothingAndReadyzSaysWhy() async throws {
        try await HubHarness.with(seed: HubHarness.legacy, relay: Self.relay(maxBacklog: .seconds(30))) { hub in
            let waiting = try await Self.storeWaiting(age: .seconds(45), in: hub.database)
            let messages = hub.database.collection(CollectionName.message)

            let refused = try await hub.request(
                .post, "/message", as: .communicator, json: RelayOutboxTests.information())
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.errorCode == "relay_behind")
            #expect(refused.headers[.retryAfter] == "5")
            #expect(try await messages.countDocuments() == 1)
            // Bad input is still told apart from a full relay: its own 4xx first.
            let bad = try await hub.request(.post, "/message", as: .communicator, json: #"{"title": 1}"#)
            #expect(bad.status == .unprocessableContent)

            let ready = try await hub.request(.get, "/readyz")
            #expect(ready.status == .ok, "a relay that is behind refuses messages on every replica; reads go on")
            let report = try ready.json()
            #expect(report["messages"]?.stringValue == "refused")
            #expect(report["reason"]?.stringValue?.contains("behind") == true)
            #expect((report["relay_backlog_seconds"]?.doubleValue ?? 0) >= 45)

            // The relay caught up: within the backlog's reading interval, messages are taken again.
            _ = try await messages.updateOne(["_id": .objectID(waiting)], ["$set": ["relay.state": "sent"]])
            try await eventually("POST /message is accepted again", within: .seconds(30)) {
                try await hub.request(
                    .post, "/message", as: .communicator,
                    json: RelayOutboxTests.information()
                ).status == .created
            }
            #expect(try await hub.request(.get, "/readyz").json()["messages"]?.stringValue == "accepted")
        }
    }

    @Test func aWorkersRecordOfMessagesTakenButNotSentCountsToo() async throws {
        try await HubHarness.with(seed: HubHarness.legacy, relay: Self.relay(maxBacklog: .seconds(30))) { hub in
            let now = UnixTime.nowMilliseconds()
            // A live worker that last wrote now and still holds a message stored 40 s ago.
            _ = try await hub.database.collection(CollectionName.relayProgress).insertOne([
                "_id": "host/1/worker/1", "through": 7, "since": .int64(now - 40_000), "until": .int64(now + 5_000),
                "updated_at": .int64(now),
            ])
            let refused = try await hub.request(
                .post, "/message", as: .communicator, json: RelayOutboxTests.information())
            #expect(refused.errorCode == "relay_behind")
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }

    @Test func aBacklogUnderTheBoundAMessageScheduledLaterOrALeasedOneRefuseNothing() async throws {
        // A bound far above the waiting message's age, far below the others': the test may run slowly on a busy
        // machine, and the waiting message ages meanwhile.
        try await HubHarness.with(seed: HubHarness.legacy, relay: Self.relay(maxBacklog: .seconds(600))) { hub in
            _ = try await Self.storeWaiting(age: .seconds(10), in: hub.database)
            // Due in an hour, and one a worker holds under a live lease: neither waits for anyone.
            _ = try await Self.storeWaiting(age: .seconds(-3600), in: hub.database)
            let leased = try await Self.storeWaiting(age: .seconds(3600), in: hub.database)
            _ = try await hub.database.collection(CollectionName.message).updateOne(
                ["_id": .objectID(leased)],
                [
                    "$set": [
                        "relay.lease_owner": "someone",
                        "relay.lease_until": .int64(UnixTime.nowMilliseconds() + 3_600_000),
                    ]
                ])
            #expect(
                try await hub.request(
                    .post, "/message", as: .communicator,
                    json: RelayOutboxTests.information()
                ).status == .created)
            let backlog = try await hub.request(.get, "/readyz").json()["relay_backlog_seconds"]?.doubleValue ?? 0
            #expect(backlog >= 10 && backlog < 600)
        }
    }

    @Test func zeroMeansNoBound() async throws {
        #expect(try RelayConfiguration.fromEnvironment(["RELAY_MAX_BACKLOG_SECONDS": "0"]).maxBacklog == nil)
        #expect(try RelayConfiguration.fromEnvironment([:]).maxBacklog == .seconds(30))
        #expect(
            try RelayConfiguration.fromEnvironment(["RELAY_MAX_BACKLOG_SECONDS": "120"]).maxBacklog == .seconds(120))
        #expect(throws: (any Error).self) {
            try RelayConfiguration.fromEnvironment(["RELAY_MAX_BACKLOG_SECONDS": "-1"])
        }
        try await HubHarness.with(seed: HubHarness.legacy, relay: Self.relay(maxBacklog: nil)) { hub in
            _ = try await Self.storeWaiting(age: .seconds(3600), in: hub.database)
            #expect(
                try await hub.request(
                    .post, "/message", as: .communicator,
                    json: RelayOutboxTests.information()
                ).status == .created)
        }
    }
}
