import DAO
import FakeFCM
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HubCore
import HubServer
import Logging
import Mongo
import MongoTestSupport
import ServiceLifecycle
import Testing

/// A real hub (`buildApplication`, run as `msi-hub serve` runs it) on a test database of its own, relaying to and
/// subscribing at a fake FCM, listening on 127.0.0.1 where MSIKit reaches it over HTTP like a phone.
struct LiveHub: Sendable {
    let url: URL
    let fake: FakeFCM
    let database: MongoDatabase

    /// The secret of the admin API token the hub starts with.
    static let adminToken = "msi_e2e-admin-token-0123456789abcdef0123456789abcd"

    /// Starts a fake FCM and a hub seeded with `SchoolCube`, and runs `body` against them.
    static func with(
        _ test: String = #function, persons: PersonConfiguration = PersonConfiguration(),
        countsUnread: Bool = false, _ body: @Sendable (LiveHub) async throws -> Void
    ) async throws {
        try await FakeFCM.with { fake in
            try await with(test, fake: fake, persons: persons, countsUnread: countsUnread, body)
        }
    }

    /// Starts a hub seeded with `SchoolCube` on `port` (nil: a free one), relaying to `fake`, and runs `body`
    /// against it; the hub shuts down gracefully afterwards. With `cutter`, the hub reaches the database through it.
    static func with(
        _ test: String = #function, fake: FakeFCM, port: Int? = nil,
        persons: PersonConfiguration = PersonConfiguration(), countsUnread: Bool = false,
        through cutter: ConnectionCutter? = nil, _ body: @Sendable (LiveHub) async throws -> Void
    ) async throws {
        try await TestDatabase.with(test) { database in
            try await DatabaseIndexes.ensure(in: database)
            _ = try await database.collection(CollectionName.icube).insertOne(SchoolCube.document)
            _ = try await TokenDAO(database: database).add(
                name: "e2e-admin", role: .admin,
                secretHash: Credentials.hash(token: adminToken))
            let account = try fake.makeServiceAccount()
            var relay = RelayConfiguration(
                fcmEnvironment: ["GOOGLE_APPLICATION_CREDENTIALS": account.path, "FCM_ENDPOINT": fake.baseURL])
            // These tests are not about back-pressure: a loaded two-core machine may put the relay more than 30 s
            // behind, and the hub would refuse their messages (RelayBacklogTests check the bound).
            relay.maxBacklog = nil
            let port = try port ?? LoopbackPort.free()
            var configuration = HubConfiguration(
                mongoURI: try cutter.map { $0.uri(through: try TestDatabase.uri()) } ?? TestDatabase.uri(), port: port,
                databasePoolSize: 8, relay: relay,
                devices: DeviceConfiguration(registrationsPerMinute: 100_000))
            configuration.persons = persons
            configuration.devices.countsUnread = countsUnread
            // The approval policy's default rules off: these tests send to a Forced subject and with urgency critical.
            configuration.approval = ApprovalPolicy(defaults: false)
            var logger = Logger(label: "msi-hub")
            logger.logLevel = .warning
            let app = try await buildApplication(
                configuration: configuration, logger: logger, databaseName: database.name)
            let services = ServiceGroup(configuration: .init(services: [app], logger: logger))
            let hub = LiveHub(url: URL(string: "http://127.0.0.1:\(port)")!, fake: fake, database: database)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await services.run() }
                do {
                    try await eventually("the hub listens on \(port)") { LoopbackPort.isListening(port) }
                    try await body(hub)
                } catch {
                    await services.triggerGracefulShutdown()
                    throw error
                }
                await services.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    /// Sends a message through `POST /message` as the admin, as a school's script would; returns its `msi_key`.
    @discardableResult
    func send(_ subject: SchoolCube.Subject, title: String, text: String = "Details inside.", ttl: Int? = nil)
        async throws
        -> String
    {
        var fields: [String: Any] = [
            "title": title, "desc": "\(title) (summary)", "message": text, "topic_key": subject.topicKey,
            "distribution": subject.distribution,
        ]
        if let ttl { fields["ttl"] = ttl }
        return try await sendMessage(fields)
    }

    /// Sends an Alert to `persons` and `groups` through `POST /message` as the admin; returns its `msi_key`.
    @discardableResult
    func send(toPersons persons: [String] = [], groups: [String] = [], title: String, data: [String: String] = [:])
        async throws -> String
    {
        var fields: [String: Any] = [
            "title": title, "desc": "\(title) (summary)", "message": "For you.", "distribution": "Alert",
            "to": ["persons": persons, "groups": groups],
        ]
        if !data.isEmpty { fields["data"] = data }
        return try await sendMessage(fields)
    }

    /// POST /message with `fields` as the admin; the stored message's `msi_key`.
    private func sendMessage(_ fields: [String: Any]) async throws -> String {
        let (status, data) = try await request("POST", "message", fields)
        try #require(status == 201, "POST /message answered \(status): \(String(decoding: data, as: UTF8.self))")
        let answer = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try #require(answer["msi_key"] as? String)
    }

    /// Creates or replaces group `id` with `members` (PUT /group/:groupID as the admin).
    func putGroup(_ id: String, members: [String]) async throws {
        let (status, data) = try await request("PUT", "group/\(id)", ["name": id, "members": members])
        try #require(
            status == 200 || status == 201, "PUT /group answered \(status): \(String(decoding: data, as: UTF8.self))")
    }

    /// A JSON request to `path` as the admin: the status and the body.
    func request(_ method: String, _ path: String, _ json: [String: Any]? = nil) async throws -> (
        status: Int, body: Data
    ) {
        var request = URLRequest(url: url.appendingPathComponent(path))
        request.httpMethod = method
        request.setValue("Bearer \(Self.adminToken)", forHTTPHeaderField: "Authorization")
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// Waits until the fake FCM has `registration` subscribed to exactly `topics` (the reconciler works in the
    /// background), for up to `limit`.
    func waitUntilApplied(_ registration: String, _ topics: Set<String>, limit: Duration = .seconds(20)) async throws {
        try await eventually("FCM has \(registration)'s subscriptions", within: limit) {
            fake.subscriptions(of: registration) == topics
        }
    }

    /// A phone that has started (registered, initialised), whose subscriptions FCM has applied, and that listens;
    /// the caller stops it.
    func listeningPhone(_ token: String) async throws -> SimulatedPhone {
        let phone = try SimulatedPhone(hub: url, fake: fake, token: token)
        try await phone.start()
        try await waitUntilApplied(token, SchoolCube.automatic)
        phone.listen()
        return phone
    }

    /// Waits until every message sent so far has reached FCM (none left pending in the outbox, nor past its
    /// worker's progress record).
    func waitUntilRelayed(limit: Duration = .seconds(60)) async throws {
        let outbox = OutboxDAO(database: database)
        let progress = RelayProgressDAO(database: database)
        try await eventually("every message relayed", within: limit) {
            try await outbox.count(.pending, progress: progress) == 0
        }
    }
}
