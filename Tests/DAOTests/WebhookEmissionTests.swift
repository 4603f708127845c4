import DAO
import HubModel
import Mongo
import Testing

/// Every webhook event's payload, built in one place (`WebhookEmission`) whichever layer emits it.
@Suite("Webhook event payloads")
struct WebhookEmissionTests {
    let key = ObjectID()

    func message(_ fields: BSONDocument = [:]) throws -> Message {
        var document: BSONDocument = [
            "_id": .objectID(ObjectID()), "msi_key": .objectID(key), "title": "Fire drill", "desc": "",
            "message": "m", "timestamp": 1, "topic_key": "c-a-s",
        ]
        for (name, value) in fields { document[name] = value }
        return try #require(Message(document: document))
    }

    @Test func theRelaysEventsNameTheAudience() throws {
        let sent = WebhookEmission.sent(try message(), at: 42)
        #expect(sent.event == .messageSent && sent.msiKey == key)
        #expect(sent.payload["msi_key"]?.stringValue == key.hex && sent.payload["title"]?.stringValue == "Fire drill")
        #expect(sent.payload["topic_key"]?.stringValue == "c-a-s" && sent.payload["sent_at"]?.int64Value == 42)
        let failed = WebhookEmission.failed(try message(["to": ["persons": ["p1"]]]), reason: "expired", at: 7)
        #expect(failed.event == .messageFailed && failed.payload["reason"]?.stringValue == "expired")
        #expect(failed.payload["topic_key"] == nil && failed.payload["to"]?.documentValue != nil)
        #expect(failed.payload["failed_at"]?.int64Value == 7)
    }

    @Test func anAcknowledgementNamesTheDeviceAndWhatWasAnswered() throws {
        let device = ObjectID()
        let receipt = Receipt(
            message: ObjectID(), device: device, person: "p1", event: .acknowledged, response: "yes", at: 9,
            platform: .android)
        let emission = WebhookEmission.acknowledged(try message(), by: receipt)
        #expect(emission.event == .messageAcknowledged)
        #expect(
            emission.payload["device"]?.stringValue == device.hex && emission.payload["person"]?.stringValue == "p1")
        #expect(emission.payload["response"]?.stringValue == "yes" && emission.payload["at"]?.int64Value == 9)
        #expect(emission.payload["topic_key"] == nil)
    }

    @Test func anUnacknowledgedEscalationListsDevicesAndPersons() throws {
        let (a, b, c) = (ObjectID(), ObjectID(), ObjectID())
        let emission = WebhookEmission.unacknowledged(
            try message(), devices: [a, b, c], persons: [(person: "p2", devices: [b, c])])
        #expect(emission.event == .messageUnacknowledged)
        #expect(emission.payload["devices"]?.arrayValue?.compactMap(\.stringValue) == [a.hex, b.hex, c.hex])
        #expect(emission.payload["persons"]?.arrayValue?.compactMap(\.stringValue) == ["p2"])
        let listed = try #require(emission.payload["unacknowledged"]?.arrayValue?.first?.documentValue)
        #expect(listed["person"]?.stringValue == "p2")
        #expect(listed["devices"]?.arrayValue?.compactMap(\.stringValue) == [b.hex, c.hex])
    }
}
