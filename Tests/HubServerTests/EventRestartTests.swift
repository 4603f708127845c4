import DAO
import FakeFCM
import Foundation
@testable import HubCore
import HubTime
import Mongo
import MongoTestSupport
import Testing

/// A hub process killed between an event's creation and its reminders' times: the reminders are in the database, not
/// in the process, so the hub started next sends each of them once, the one that fell due while no hub ran as soon as
/// it is up (the event has not started) and the next at its time.
@Suite("Events across a killed hub", .tags(.faults))
struct EventRestartTests {
    @Test func aHubKilledAfterMakingAnEventLosesNoneOfItsRemindersAndSendsNoneTwice() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                try await HubHarness.legacy(database)
                _ = try await TokenDAO(database: database).add(
                    name: "admin-script", role: .admin, secretHash: Credentials.hash(token: HubHarness.adminToken))
                let account = try fake.makeServiceAccount()
                let environment = ["GOOGLE_APPLICATION_CREDENTIALS": account.path, "FCM_ENDPOINT": fake.baseURL]
                let uri = try HubProcess.uri(of: database)
                let first = try await HubProcess(mongoURI: uri, environment: environment)
                // Starts in 14 s; reminders 10 s before (4 s from now, while no hub runs) and at the start.
                let start = EventTests.utcLocal(inSeconds: 14)
                let body = #"""
                    {"title": "Fire drill", "message": "Leave by the nearest exit.", "starts_at": "\#(start.text)",
                     "tz": "UTC", "reminders": ["PT10S", "PT0S"], "topic_key": "\#(Fixtures.Legacy.hoursTopic)",
                     "distribution": "Alert"}
                    """#
                let created = try await first.post("/event", json: body, token: HubHarness.adminToken)
                #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
                let id = try #require(
                    try BSONDocument(extendedJSON: String(decoding: created.body, as: UTF8.self))["id"]?.stringValue)
                await first.kill()
                let firstDue = start.ms - 10_000
                // Down through the first reminder's time.
                while UnixTime.nowMilliseconds() < firstDue + 1_500 { try await Task.sleep(for: .milliseconds(100)) }
                #expect(Self.reminders(of: id, fake).isEmpty)

                let second = try await HubProcess(mongoURI: uri, environment: environment)
                defer { second.stop() }
                try await eventually("the late reminder is sent", within: .seconds(20)) {
                    Self.reminders(of: id, fake).contains("PT10S")
                }
                try await eventually("the reminder at the start is sent", within: .seconds(30)) {
                    Self.reminders(of: id, fake).contains("PT0S")
                }
                let arrivedAtStart = UnixTime.nowMilliseconds()
                #expect(
                    arrivedAtStart >= start.ms, "the reminder at the start came \(start.ms - arrivedAtStart) ms early")
                // A moment more for any second copy, then each exactly once, and once in history.
                try await Task.sleep(for: .seconds(2))
                #expect(Self.reminders(of: id, fake).sorted() == ["PT0S", "PT10S"])
                let stored = try await database.collection(CollectionName.message).countDocuments([
                    "data.event": .string(id)
                ])
                #expect(stored == 2)
            }
        }
    }

    /// The reminder leads of the requests FCM got for event `id`, one entry a request.
    static func reminders(of id: String, _ fake: FakeFCM) -> [String] {
        fake.received.filter { $0.data["event"] == id }.compactMap { $0.data["reminder"] }
    }
}
