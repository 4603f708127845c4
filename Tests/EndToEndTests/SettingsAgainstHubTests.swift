import DAO
import Foundation
import MSIKit
import Mongo
import Testing

/// MSIKit's person settings against a real hub: what one phone sets, another phone of the person reads and gets
/// (quiet hours and language on the device), a Forced subject cannot be turned off, and a phone bound to nobody sends
/// its own language instead.
@Suite("MSIKit person settings")
struct SettingsAgainstHubTests {
    @Test func settingsSetOnOnePhoneReachTheOtherAndALooseDeviceSendsItsOwnLocale() async throws {
        try await LiveHub.with(persons: PersonBindingAgainstHubTests.persons()) { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "settings-phone-1")
            let tablet = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "settings-tablet-1")
            for device in [phone, tablet] {
                try await device.start()
                let assertion = try await PersonBindingAgainstHubTests.assertion("student-12")
                #expect(try await device.client.bind(assertion: assertion) == "student-12")
            }
            try await hub.putGroup("chess", members: ["student-12"])
            let topics = try await phone.client.cube().subjects
            let forced = try #require(topics.first { $0.level == .forced })
            let optional = try #require(topics.first { $0.level != .forced })

            try await phone.client.setQuietHours(QuietHours(from: "21:00", to: "06:30", timeZone: "Europe/Berlin"))
            try await phone.client.setLocale("de")
            try await phone.client.setDelivery(.digest, for: .subject(optional.topicKey))
            let settings = try await phone.client.setDelivery(.off, for: .group("chess"))
            #expect(settings.delivery(for: .group("chess")) == .off)
            #expect(settings.delivery(for: .subject(optional.topicKey)) == .digest)

            let read = try await tablet.client.settings()
            #expect(read.person == "student-12" && read.locale == "de")
            #expect(read.quietHours == QuietHours(from: "21:00", to: "06:30", timeZone: "Europe/Berlin"))
            #expect(read.delivery(for: .group("chess")) == .off && read.delivery(for: .subject("x")) == .instant)
            // The tablet itself now has the person's quiet hours and language.
            let device = try await Self.stored(try await tablet.client.registrationState().deviceID, in: hub)
            #expect(device["locale"]?.stringValue == "de")
            #expect(device[path: "quiet_hours.from"]?.stringValue == "21:00")

            let refused = await #expect(throws: MSIKitError.self) {
                try await phone.client.setDelivery(.off, for: .subject(forced.topicKey))
            }
            #expect(refused?.code == .forcedSubscription)

            // A phone bound to nobody: no person's settings; its locale goes to the device itself.
            let loose = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "settings-loose-1")
            try await loose.start()
            let unbound = await #expect(throws: MSIKitError.self) { try await loose.client.settings() }
            #expect(unbound?.code == .notBound)
            try await loose.client.setLocale("fr")
            let looseDevice = try await Self.stored(try await loose.client.registrationState().deviceID, in: hub)
            #expect(looseDevice["locale"]?.stringValue == "fr")
        }
    }

    /// The device document of `id` as stored.
    static func stored(_ id: String?, in hub: LiveHub) async throws -> BSONDocument {
        let hex = try #require(id)
        let objectID = try #require(ObjectID(hex: hex))
        let stored = try await hub.database.collection(CollectionName.devices).findOne(["_id": .objectID(objectID)])
        return try #require(stored)
    }
}
