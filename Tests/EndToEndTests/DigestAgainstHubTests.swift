import DAO
import Foundation
import HubTime
import MSIKit
import Mongo
import MongoTestSupport
import Testing

/// A daily digest end to end: a phone on MSIKit puts the exams subject in digest mode, an Alert of that subject is
/// sent through the API, and when the person's digest falls due the hub's digest sender pushes one digest through the
/// fake FCM that the phone's listener keeps (`lastDigest()`), naming exactly that message.
@Suite("MSIKit daily digest")
struct DigestAgainstHubTests {
    @Test func aHeldAlertArrivesInThePersonsDigestOnThePhone() async throws {
        try await LiveHub.with(persons: PersonBindingAgainstHubTests.persons()) { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "digest-phone-e2e")
            try await phone.start()
            let assertion = try await PersonBindingAgainstHubTests.assertion("student-21")
            #expect(try await phone.client.bind(assertion: assertion) == "student-21")
            let settings = try await phone.client.setDelivery(.digest, for: .subject(SchoolCube.exams.topicKey))
            #expect(settings.delivery(for: .subject(SchoolCube.exams.topicKey)) == .digest)
            phone.listen()
            defer { phone.stop() }
            #expect(try await phone.client.lastDigest() == nil)

            let key = try await hub.send(SchoolCube.exams, title: "Exam rooms")
            // The person's digest hour comes: its planned time is moved to now, as a clock would.
            let schedule = hub.database.collection(CollectionName.digestSchedule)
            try await eventually("the digest is planned") {
                try await schedule.countDocuments(["_id": "student-21"]) == 1
            }
            _ = try await schedule.updateOne(
                ["_id": "student-21"], ["$set": ["due_at": .int64(UnixTime.nowMilliseconds())]])
            try await eventually("the phone keeps the digest", within: .seconds(60)) {
                try await phone.client.lastDigest() != nil
            }
            let digest = try #require(try await phone.client.lastDigest())
            #expect(digest.count == 1 && digest.items.map(\.msiKey) == [key])
            #expect(digest.items.first?.title == "Exam rooms")
            #expect(digest.summary.hasPrefix("1 new"), "\(digest.summary)")
            #expect(phone.listenerErrors.isEmpty)
        }
    }
}
