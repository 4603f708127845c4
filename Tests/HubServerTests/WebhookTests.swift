import Crypto
import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
@testable import Relay
import Testing

/// Webhooks for the school's gateways: admin routes, the secret shown once, signed durable deliveries with retries,
/// the guard against server-side request forgery, and the deliveries list, against a real receiver.
@Suite("Webhooks", .tags(.faults))
struct WebhookTests {
    /// Deliveries may reach the test's receiver on loopback, and are retried quickly.
    static func loopback(retryFor: Duration = .seconds(3600)) throws -> WebhookConfiguration {
        var configuration = WebhookConfiguration()
        configuration.policy = try WebhookAddressPolicy(parsing: "127.0.0.1/32")
        configuration.worker.retry = RetryPolicy(base: .milliseconds(200), cap: .seconds(1), quotaPause: nil)
        configuration.worker.retryFor = retryFor
        configuration.worker.poll = .milliseconds(200)
        return configuration
    }

    static func create(_ hub: HubHarness, url: String, events: [String] = ["message.sent"]) async throws -> BSONDocument
    {
        let list = events.map { "\"\($0)\"" }.joined(separator: ", ")
        let response = try await hub.request(
            .post, "/webhook", as: .admin, json: #"{"url": "\#(url)", "events": [\#(list)]}"#)
        #expect(response.status == .created, "\(response.text)")
        return try response.json()
    }

    static func deliveries(_ hub: HubHarness, _ id: String, cursor: String? = nil) async throws -> BSONDocument {
        let query = cursor.map { "?cursor=\($0)&limit=2" } ?? ""
        let response = try await hub.request(.get, "/webhook/\(id)/deliveries\(query)", as: .admin)
        #expect(response.status == .ok, "\(response.text)")
        return try response.json()
    }

    // MARK: Routes

    @Test func createAnswersTheSecretOnceAndListGetAndDeleteNeverShowIt() async throws {
        try await HubHarness.with { hub in
            let created = try await Self.create(
                hub, url: "https://hooks.example.org/msi?school=7",
                events: ["message.sent", "message.unacknowledged"])
            let id = try #require(created["id"]?.stringValue)
            let secret = try #require(created["secret"]?.stringValue)
            #expect(secret.hasPrefix("whsec_"))
            #expect((Data(base64Encoded: String(secret.dropFirst(6)))?.count ?? 0) >= 24)
            #expect(created["url"] == "https://hooks.example.org/msi?school=7")
            #expect(created["events"] == .array(["message.sent", "message.unacknowledged"]))
            #expect((created["created_at"]?.int64Value ?? 0) > 1_700_000_000_000)

            let one = try await hub.request(.get, "/webhook/\(id)", as: .admin)
            #expect(one.status == .ok && !one.text.contains(secret) && !one.text.contains("whsec_"))
            #expect(try one.json()["id"]?.stringValue == id && (try one.json()["secret"]) == nil)
            let list = try await hub.request(.get, "/webhook", as: .admin)
            #expect(list.status == .ok && !list.text.contains("whsec_"))
            #expect(try list.json()["webhooks"]?.arrayValue?.count == 1)

            #expect(try await hub.request(.delete, "/webhook/\(id)", as: .admin).status == .noContent)
            let gone = try await hub.request(.get, "/webhook/\(id)", as: .admin)
            #expect(gone.status == .notFound && gone.errorCode == "webhook_not_found")
            #expect(try await hub.request(.delete, "/webhook/\(id)", as: .admin).errorCode == "webhook_not_found")
            #expect(try await hub.request(.get, "/webhook/\(id)/deliveries", as: .admin).status == .notFound)
            let malformed = try await hub.request(.get, "/webhook/not-an-id", as: .admin)
            #expect(malformed.status == .badRequest && malformed.errorCode == "invalid_id")
            let cursor = try await hub.request(.get, "/webhook/\(ObjectIDs.missing)/deliveries?cursor=x", as: .admin)
            #expect(cursor.status == .badRequest && cursor.errorCode == "invalid_query")
        }
    }

    @Test func urlsAndEventsTheRulesRefuseAre422AndStoreNothing() async throws {
        let long = "https://example.org/" + String(repeating: "a", count: 2100)
        let refused: [String] = [
            #"{"url": "https://example.org/h", "events": ["message.deleted"]}"#,
            #"{"url": "https://example.org/h", "events": []}"#,
            #"{"url": "https://example.org/h", "events": "message.sent"}"#,
            #"{"url": "https://example.org/h", "events": [1]}"#,
            #"{"events": ["message.sent"]}"#,
            #"{"url": "\#(long)", "events": ["message.sent"]}"#,
            #"{"url": "ftp://example.org/h", "events": ["message.sent"]}"#,
            #"{"url": "not a url", "events": ["message.sent"]}"#,
            #"{"url": "https://user:pw@example.org/h", "events": ["message.sent"]}"#,
            #"{"url": "http://example.org/h", "events": ["message.sent"]}"#,
            #"{"url": "https://127.0.0.1:8443/h", "events": ["message.sent"]}"#,
            #"{"url": "https://10.1.2.3/h", "events": ["message.sent"]}"#,
            #"{"url": "https://192.168.0.10/h", "events": ["message.sent"]}"#,
            #"{"url": "https://169.254.169.254/latest/meta-data", "events": ["message.sent"]}"#,
            #"{"url": "https://[::1]/h", "events": ["message.sent"]}"#,
            #"{"url": "https://[fd00::1]/h", "events": ["message.sent"]}"#,
            #"{"url": "https://[::ffff:127.0.0.1]/h", "events": ["message.sent"]}"#,
            #"{"url": "https://0.0.0.0/h", "events": ["message.sent"]}"#,
            #"{"url": "https://224.0.0.1/h", "events": ["message.sent"]}"#,
        ]
        try await HubHarness.with { hub in
            for body in refused {
                let response = try await hub.request(.post, "/webhook", as: .admin, json: body)
                #expect(response.status == .unprocessableContent && response.errorCode == "invalid_webhook", "\(body)")
            }
            #expect(try await hub.request(.get, "/webhook", as: .admin).json()["webhooks"] == .array([]))
            #expect(try await hub.database.collection(CollectionName.webhooks).countDocuments() == 0)
        }
    }

    @Test func allowedNetworksOpenPlainHTTPToThemAndNoOtherPrivateAddress() async throws {
        try await HubHarness.with(webhooks: try Self.loopback()) { hub in
            _ = try await Self.create(hub, url: "http://127.0.0.1:9/hook")
            let other = try await hub.request(
                .post, "/webhook", as: .admin,
                json: #"{"url": "http://10.0.0.1/h", "events": ["message.sent"]}"#)
            #expect(other.errorCode == "invalid_webhook")
            let loopbackElsewhere = try await hub.request(
                .post, "/webhook", as: .admin,
                json: #"{"url": "https://127.0.0.2/h", "events": ["message.sent"]}"#)
            #expect(loopbackElsewhere.errorCode == "invalid_webhook")
        }
    }

    @Test func onlyAdminsReachTheWebhookRoutes() async throws {
        try await HubHarness.with { hub in
            let id = ObjectIDs.missing
            let routes: [(HTTPRequest.Method, String, String?)] = [
                (.post, "/webhook", #"{"url": "https://example.org/h", "events": ["message.sent"]}"#),
                (.get, "/webhook", nil), (.get, "/webhook/\(id)", nil), (.delete, "/webhook/\(id)", nil),
                (.get, "/webhook/\(id)/deliveries", nil),
            ]
            for (method, path, json) in routes {
                let anonymous = try await hub.request(method, path, json: json)
                #expect(anonymous.status == .unauthorized, "\(method) \(path)")
                let communicator = try await hub.request(method, path, as: .communicator, json: json)
                #expect(communicator.status == .forbidden && communicator.errorCode == "forbidden", "\(method) \(path)")
            }
            #expect(try await hub.database.collection(CollectionName.webhooks).countDocuments() == 0)
        }
    }

    // MARK: Deliveries

    @Test func aSentMessageReachesTheReceiverSignedAndIsListedAsDelivered() async throws {
        try await WebhookReceiver.with { receiver in
            try await HubHarness.with(seed: HubHarness.legacy, webhooks: try Self.loopback()) { hub in
                let created = try await Self.create(hub, url: receiver.url, events: ["message.sent", "message.failed"])
                receiver.expect(secret: try #require(created["secret"]?.stringValue))
                let key = try await hub.post(MessageRoutesTests.body(title: "Lockdown drill"))
                try await eventually("the receiver gets message.sent", within: .seconds(30)) {
                    !receiver.accepted.isEmpty
                }
                let delivery = try #require(receiver.accepted.first)
                #expect(delivery.valid)
                #expect(delivery.id.hasPrefix("msg_"))
                #expect(delivery.contentType?.hasPrefix("application/json") == true)
                #expect(delivery.body["type"] == "message.sent")
                #expect(delivery.body["timestamp"]?.stringValue?.hasSuffix("Z") == true)
                #expect(delivery.body[path: "data.msi_key"]?.stringValue == key.hex)
                #expect(delivery.body[path: "data.title"] == "Lockdown drill")
                #expect(delivery.body[path: "data.topic_key"]?.stringValue == Legacy.hoursTopic)
                #expect((delivery.body[path: "data.sent_at"]?.int64Value ?? 0) > 1_700_000_000_000)

                let id = try #require(created["id"]?.stringValue)
                try await eventually("the delivery is recorded") {
                    try await Self.deliveries(hub, id)["deliveries"]?.arrayValue?.first?.documentValue?["state"]
                        == "delivered"
                }
                let listed = try #require(
                    try await Self.deliveries(hub, id)["deliveries"]?.arrayValue?.first?.documentValue)
                #expect(listed["id"]?.stringValue == delivery.id && listed["event"] == "message.sent")
                #expect(listed["attempts"]?.int64Value == 1 && listed["last_status"]?.int64Value == 200)
                #expect(listed["delivered_at"]?.int64Value != nil && listed["next_attempt_at"] == .null)
                #expect(listed["body"] == nil && listed["response"] == nil)
                #expect(receiver.received.count == 1)
            }
        }
    }

    @Test func anEndpointThatIsDownGetsEveryEventOnceItIsBackUnderTheSameIDs() async throws {
        try await WebhookReceiver.with { receiver in
            try await HubHarness.with(seed: HubHarness.legacy, webhooks: try Self.loopback()) { hub in
                receiver.refuse(true)
                let created = try await Self.create(hub, url: receiver.url)
                receiver.expect(secret: try #require(created["secret"]?.stringValue))
                let id = try #require(created["id"]?.stringValue)
                var keys: Set<String> = []
                for index in 0..<3 {
                    keys.insert(try await hub.post(MessageRoutesTests.body(title: "Notice \(index)")).hex)
                }
                // Each event refused at least twice: the receiver was down across retries.
                try await eventually("every event is refused twice", within: .seconds(60)) {
                    Dictionary(grouping: receiver.received, by: \.id).values.filter { $0.count >= 2 }.count == 3
                }
                let page =
                    try await Self.deliveries(hub, id)["deliveries"]?.arrayValue?.compactMap(\.documentValue) ?? []
                #expect(page.count == 3)
                #expect(page.allSatisfy { $0["state"] == "pending" && $0["last_status"]?.int64Value == 503 })
                #expect(page.allSatisfy { $0["next_attempt_at"]?.int64Value != nil })
                let refusedIDs = Set(receiver.received.map(\.id))

                receiver.refuse(false)
                try await eventually("every event arrives", within: .seconds(60)) {
                    Set(receiver.accepted.compactMap { $0.body[path: "data.msi_key"]?.stringValue }) == keys
                }
                #expect(receiver.accepted.allSatisfy { $0.valid })
                #expect(receiver.received.allSatisfy { $0.valid })
                #expect(Set(receiver.accepted.map(\.id)) == refusedIDs)
                try await eventually("every delivery is recorded") {
                    let page = try await Self.deliveries(hub, id)["deliveries"]?.arrayValue ?? []
                    return page.allSatisfy { $0.documentValue?["state"] == "delivered" }
                }
                // Pages of two, newest first, with a cursor.
                let first = try await Self.deliveries(hub, id, cursor: "ffffffffffffffffffffffff")
                #expect(first["deliveries"]?.arrayValue?.count == 2)
                let next = try #require(first["next"]?.stringValue)
                let second = try await Self.deliveries(hub, id, cursor: next)
                #expect(second["deliveries"]?.arrayValue?.count == 1 && second["next"] == .null)
            }
        }
    }

    @Test func aDeliveryRefusedPastItsRetryWindowIsMarkedFailed() async throws {
        try await WebhookReceiver.with { receiver in
            try await HubHarness.with(seed: HubHarness.legacy, webhooks: try Self.loopback(retryFor: .seconds(5))) {
                hub in
                receiver.refuse(true)
                let created = try await Self.create(hub, url: receiver.url)
                receiver.expect(secret: try #require(created["secret"]?.stringValue))
                let id = try #require(created["id"]?.stringValue)
                _ = try await hub.post(MessageRoutesTests.body())
                try await eventually("the delivery fails", within: .seconds(30)) {
                    try await Self.deliveries(hub, id)["deliveries"]?.arrayValue?.first?.documentValue?["state"]
                        == "failed"
                }
                let listed = try #require(
                    try await Self.deliveries(hub, id)["deliveries"]?.arrayValue?.first?.documentValue)
                #expect(listed["last_status"]?.int64Value == 503 && listed["failed_at"]?.int64Value != nil)
                #expect((listed["attempts"]?.int64Value ?? 0) >= 1)
                let attempts = receiver.received.count
                try await Task.sleep(for: .seconds(1))
                #expect(receiver.received.count == attempts)
            }
        }
    }

    @Test func withoutAllowedNetworksALoopbackNameIsRefusedAtDeliveryAndNothingIsSent() async throws {
        try await WebhookReceiver.with { receiver in
            var configuration = try Self.loopback()
            configuration.policy = WebhookAddressPolicy()
            try await HubHarness.with(seed: HubHarness.legacy, webhooks: configuration) { hub in
                let literal = try await hub.request(
                    .post, "/webhook", as: .admin,
                    json: #"{"url": "https://127.0.0.1:\#(receiver.port)/hook", "events": ["message.sent"]}"#)
                #expect(literal.errorCode == "invalid_webhook")
                // A name is only known at delivery: accepted here, refused there once it resolves to loopback.
                let created = try await Self.create(hub, url: "https://localhost:\(receiver.port)/hook")
                let id = try #require(created["id"]?.stringValue)
                _ = try await hub.post(MessageRoutesTests.body())
                try await eventually("the attempt is refused", within: .seconds(30)) {
                    try await Self.deliveries(hub, id)["deliveries"]?.arrayValue?.first?.documentValue?["last_error"]
                        == "address_refused"
                }
                #expect(receiver.received.isEmpty)
            }
        }
    }

    @Test func anEventNoWebhookSubscribesToWritesNothing() async throws {
        try await HubHarness.with(seed: HubHarness.legacy, webhooks: try Self.loopback()) { hub in
            let outbox = hub.database.collection(CollectionName.webhookDeliveries)
            let key = try await hub.post(MessageRoutesTests.body())
            try await Self.waitUntilSent(hub, key)
            _ = try await Self.create(hub, url: "https://hooks.example.org/h", events: ["message.failed"])
            let second = try await hub.post(MessageRoutesTests.body(title: "Second"))
            try await Self.waitUntilSent(hub, second)
            #expect(try await outbox.countDocuments() == 0)
        }
    }

    /// Waits until the message `key` is sent (its relay state says so, or its process's progress passed it).
    static func waitUntilSent(_ hub: HubHarness, _ key: ObjectID) async throws {
        let progress = RelayProgressDAO(database: hub.database)
        let outbox = OutboxDAO(database: hub.database)
        try await eventually("the message is sent", within: .seconds(30)) {
            try await outbox.count(.pending, progress: progress) == 0
        }
        _ = key
    }

    // MARK: Parts

    @Test func theSignatureIsTheStandardWebhooksOne() throws {
        // The Standard Webhooks specification's example.
        let key = try #require(WebhookSignature.key(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let signature = WebhookSignature.sign(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Array(#"{"test": 2432232314}"#.utf8), key: key)
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(WebhookSignature.key(secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == nil)
    }

    @Test func theAddressRuleRefusesLocalAddressesUnlessAllowed() throws {
        let closed = WebhookAddressPolicy()
        for text in [
            "127.0.0.1", "10.2.3.4", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0", "224.0.0.5",
            "::1", "::", "fd12::1", "fe80::1", "ff02::1", "100.64.0.1",
        ] {
            #expect(!closed.mayReach(try #require(ClientAddress(text)), scheme: "https"), "\(text)")
        }
        #expect(closed.mayReach(try #require(ClientAddress("93.184.215.14")), scheme: "https"))
        #expect(!closed.mayReach(try #require(ClientAddress("93.184.215.14")), scheme: "http"))
        let open = try WebhookAddressPolicy(parsing: "10.0.0.0/8, fd00::/8")
        #expect(open.mayReach(try #require(ClientAddress("10.9.8.7")), scheme: "http"))
        #expect(open.mayReach(try #require(ClientAddress("fd00::7")), scheme: "https"))
        #expect(!open.mayReach(try #require(ClientAddress("127.0.0.1")), scheme: "https"))
        #expect(throws: AddressRangeError.self) { try WebhookAddressPolicy(parsing: "10.0.0.1/8") }
    }

    @Test func nat64And6to4AddressesAreRefusedUnlessAllowed() throws {
        let closed = WebhookAddressPolicy()
        // 127.0.0.1 and 10.0.0.1 behind a NAT64 gateway and as 6to4 addresses; a public one too: a gateway decides.
        for text in ["64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::5db8:d70e", "2002:7f00:1::1", "2002:5db8:d70e::1"] {
            let address = try #require(ClientAddress(text))
            #expect(!closed.mayReach(address, scheme: "https"), "\(text)")
            #expect(throws: WebhookRefusal.self, "\(text)") { try closed.check("https://[\(text)]/hook") }
        }
        // Just outside both blocks.
        #expect(closed.mayReach(try #require(ClientAddress("64:ff9b:0:0:1::1")), scheme: "https"))
        #expect(closed.mayReach(try #require(ClientAddress("2003::1")), scheme: "https"))
        let open = try WebhookAddressPolicy(parsing: "64:ff9b::/96, 2002:5db8:d70e::/48")
        #expect(open.mayReach(try #require(ClientAddress("64:ff9b::a00:1")), scheme: "https"))
        #expect(open.mayReach(try #require(ClientAddress("2002:5db8:d70e::1")), scheme: "https"))
        #expect(!open.mayReach(try #require(ClientAddress("2002:7f00:1::1")), scheme: "https"))
    }
}
