import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import NIOCore
import Synchronization
import Testing

/// A 503 means "not stored", a hung database fails fast, and `Idempotency-Key` makes retries safe: the hub on a
/// database of its own that the tests stop, hang and start again under POSTs.
@Suite("Write outcomes under database faults", .serialized, .tags(.faults))
struct WriteOutcomeTests {
    static let deadline = Duration.milliseconds(1_500)

    @Test func aHungDatabaseAnswersPostWithinTheDeadlineAsOutcomeUnknownReadinessSaysSoAndAllRecovers() async throws {
        try await OutageHub.with(writeDeadline: Self.deadline) { hub in
            #expect(try await hub.post(title: "before").status == .created)
            hub.server.pause()
            let clock = ContinuousClock()
            let started = clock.now
            // Several at once: one is sent and hangs, the others wait behind it (withdrawn at the deadline).
            let answers = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?, Duration).self) { group in
                for index in 0..<4 {
                    group.addTask {
                        try await TestClient.withClient(host: "127.0.0.1", port: hub.port) { connection in
                            let asked = clock.now
                            let response = try await hub.post(title: "hung \(index)", key: nil, on: connection)
                            return (response.status, response.errorCode, clock.now - asked)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (status, code, took) in answers {
                #expect(status == .serviceUnavailable)
                let known = ["write_outcome_unknown", "database_unavailable"]
                #expect(known.contains(code ?? ""))
                let limit = Self.deadline + .seconds(1)
                #expect(took < limit, "answered after \(took)")
            }
            let codes = answers.map { $0.1 ?? "" }
            #expect(codes.contains("write_outcome_unknown"))
            let report: [String] = answers.map { answer in "\(answer.1 ?? "?") after \(answer.2)" }
            print("hung database: POST answers \(report)")
            let ready = try await hub.get("/readyz")
            #expect(ready.status == .serviceUnavailable)
            let elapsed = clock.now - started
            let bound: Duration = Self.deadline * 2 + .seconds(2)
            #expect(elapsed < bound)
            hub.server.resume()
            // Back within a few seconds: ready again, and a POST is stored.
            var back = false
            for _ in 0..<60 where !back {
                back = try await hub.get("/readyz").status == .ok
                if !back { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(back)
            #expect(try await hub.post(title: "after").status == .created)
            #expect(try await hub.stored(title: "after") == 1)
        }
    }

    @Test(arguments: [Fault.kill, .pause])
    func aDatabaseStoppedInTheMiddleOfPostsLeavesNoStoredMessageBehindAPlain503(_ fault: Fault) async throws {
        try await OutageHub.with(writeDeadline: Self.deadline) { hub in
            let outcomes = try await hub.postConcurrently(clients: 6, during: .seconds(6)) {
                try await Task.sleep(for: .seconds(1))
                await fault.begin(hub.server)
                try await Task.sleep(for: .seconds(2.5))
                try await fault.end(hub.server)
            }
            try await hub.waitUntilReady()
            let stored = try await hub.storedTitles()
            let plain503 = outcomes.filter { $0.code == "database_unavailable" }.map(\.title)
            let created = outcomes.filter { $0.status == .created }.map(\.title)
            #expect(
                plain503.filter(stored.keys.contains).isEmpty,
                "stored behind a plain 503: \(plain503.filter(stored.keys.contains))")
            #expect(created.filter { stored[$0] != 1 }.isEmpty, "a 201 not stored exactly once")
            #expect(stored.values.allSatisfy { $0 == 1 })
            #expect(outcomes.allSatisfy { [.created, .serviceUnavailable].contains($0.status) })
            #expect(outcomes.filter { $0.status == .serviceUnavailable }.allSatisfy { $0.retryAfter != nil })
            #expect(created.count > 10 && outcomes.count > created.count, "\(created.count) of \(outcomes.count)")
            print(
                "\(fault): \(outcomes.count) POSTs, \(created.count) 201, \(plain503.count) database_unavailable, "
                    + "\(outcomes.filter { $0.code == "write_outcome_unknown" }.count) write_outcome_unknown")
        }
    }

    @Test func aClientRetryingEvery503WithItsIdempotencyKeyStoresEachMessageOnce() async throws {
        try await OutageHub.with(writeDeadline: Self.deadline) { hub in
            let titles = Tally()  // title → 503s seen before its 201
            let clock = ContinuousClock()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<6 {
                    group.addTask {
                        try await TestClient.withClient(host: "127.0.0.1", port: hub.port) { connection in
                            var sequence = 0
                            let started = clock.now
                            while clock.now - started < .seconds(6) {
                                sequence += 1
                                let title = "c\(client)-\(sequence)"
                                let key = "\"\(UUID().uuidString)\""
                                var failures = 0
                                while true {
                                    let response = try await hub.post(title: title, key: key, on: connection)
                                    if response.status == .created { break }
                                    #expect(response.status == .serviceUnavailable)
                                    failures += 1
                                    try await Task.sleep(for: .milliseconds(200))
                                }
                                titles.record(title, failures)
                            }
                        }
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(1))
                    await hub.server.kill()
                    try await Task.sleep(for: .seconds(1.5))
                    try await hub.server.start()
                    try await Task.sleep(for: .seconds(1))
                    hub.server.pause()
                    try await Task.sleep(for: .seconds(2))
                    hub.server.resume()
                }
                try await group.waitForAll()
            }
            let sent = titles.counts
            let stored = try await hub.storedTitles()
            #expect(Set(stored.keys) == Set(sent.keys))
            #expect(stored.values.allSatisfy { $0 == 1 }, "stored twice: \(stored.filter { $0.value > 1 })")
            let retried = sent.values.filter { $0 > 0 }.count
            #expect(retried > 0)
            print("idempotent retries: \(sent.count) messages, \(retried) retried after a 503, each stored once")
        }
    }

    enum Fault: CustomStringConvertible, Sendable {
        case kill, pause

        func begin(_ server: DatabaseServer) async {
            switch self {
            case .kill: await server.kill()
            case .pause: server.pause()
            }
        }

        func end(_ server: DatabaseServer) async throws {
            switch self {
            case .kill: try await server.start()
            case .pause: server.resume()
            }
        }

        var description: String { self == .kill ? "killed" : "paused" }
    }
}

@Suite("Idempotency-Key on POST /message and the portal's send form", .tags(.faults))
struct IdempotencyKeyTests {
    @Test func aRetryWithTheSameKeyAndBodyGetsTheFirstAnswerAndStoresNothingNew() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let first = try await hub.request(
                .post, "/message", as: .communicator, json: MessageRoutesTests.body(),
                idempotencyKey: "\"order-17\"")
            #expect(first.status == .created)
            let again = try await hub.request(
                .post, "/message", as: .communicator, json: MessageRoutesTests.body(),
                idempotencyKey: "\"order-17\"")
            #expect(again.status == .created)
            #expect(try again.json() == first.json())
            // A bare token names the same key.
            let bare = try await hub.request(
                .post, "/message", as: .communicator, json: MessageRoutesTests.body(),
                idempotencyKey: "order-17")
            #expect(try bare.json() == first.json())
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 1)
            // Another body under the same key is refused; another sender's key is theirs alone.
            let other = try await hub.request(
                .post, "/message", as: .communicator,
                json: MessageRoutesTests.body(title: "Another"), idempotencyKey: "\"order-17\"")
            #expect(other.status == .unprocessableContent)
            #expect(other.errorCode == "idempotency_key_reused")
            let admin = try await hub.request(
                .post, "/message", as: .admin, json: MessageRoutesTests.body(),
                idempotencyKey: "\"order-17\"")
            #expect(admin.status == .created)
            #expect(try admin.json()["msi_key"] != first.json()["msi_key"])
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 2)
            // A key that cannot be one.
            for key in ["", "\"\"", "with space", String(repeating: "k", count: 256)] {
                let refused = try await hub.request(
                    .post, "/message", as: .communicator, json: MessageRoutesTests.body(),
                    idempotencyKey: key)
                #expect(refused.status == .badRequest, "\(key)")
            }
            // The key is kept for 24 hours, then removed by the expiry sweep on its index.
            let reply = try await hub.database.runCommand(["listIndexes": .string(CollectionName.idempotencyKeys)])
            let indexes = reply[path: "cursor.firstBatch"]?.arrayValue ?? []
            #expect(indexes.contains { $0.documentValue?["name"]?.stringValue == "created_at.expiry" })
            #expect(
                ExpiringCollections.all.contains {
                    $0.collection == CollectionName.idempotencyKeys && $0.afterSeconds == 86_400
                })
        }
    }

    @Test func requestsWithOneKeyAtOnceStoreOneMessageAndAllAnswerIt() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let port = try #require(hub.client.port)
            let keys = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                            let response = try await client.execute(
                                .init(
                                    "/message", method: .post,
                                    headers: OutageHub.headers(key: "\"same-key\"", caller: .communicator),
                                    body: ByteBuffer(string: MessageRoutesTests.body())))
                            #expect(response.status == .created)
                            return try JSONParser().document(from: (response.body ?? ByteBuffer()).readableBytesView)[
                                "msi_key"]?.stringValue
                        }
                    }
                }
                return try await group.reduce(into: Set<String?>()) { $0.insert($1) }
            }
            #expect(keys.count == 1)
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 1)
        }
    }

    @Test func aDoubleSubmitOfThePortalsSendFormSendsOnce() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let page = try await browser.get("/portal/send")
            let key = try #require(page.text.firstMatch(of: /name="idempotency_key" value="([A-Za-z0-9_-]{43})"/)?.1)
            let form = [
                "_csrf": try PortalBrowser.csrf(in: page), "idempotency_key": String(key),
                "channel": Legacy.channelID.hex, "area": Legacy.libraryID.hex, "subject": Legacy.hoursID.hex,
                "title": "Closed", "desc": "The library is closed", "message": "Back tomorrow",
            ]
            let first = try await browser.post("/portal/send", form)
            let second = try await browser.post("/portal/send", form)
            #expect(first.status == .seeOther && second.status == .seeOther)
            #expect(first.headers[.location] == second.headers[.location])
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 1)
            // A new rendering of the form is a new message.
            let next = try await browser.get("/portal/send")
            #expect(!next.text.contains(String(key)))
        }
    }
}

/// The hub on a SecantusDB of the test's own (`DatabaseServer`), seeded with the legacy channel and the harness's
/// tokens, for tests that stop and hang the database.
struct OutageHub: Sendable {
    let server: DatabaseServer
    let client: any TestClientProtocol
    let port: Int

    static func with(writeDeadline: Duration, _ body: @Sendable (OutageHub) async throws -> Void) async throws {
        let server = try await DatabaseServer()
        let pool = try MongoClientPool(configuration: MongoConfiguration(uri: server.uri))
        let database = pool.database()
        try await DatabaseIndexes.ensure(in: database)
        try await database.collection(CollectionName.icube).insertOne(try Fixtures.legacyChannel())
        _ = try await TokenDAO(database: database).add(
            name: "admin-script", role: .admin,
            secretHash: Credentials.hash(token: HubHarness.adminToken))
        await pool.close()
        // Journaled writes (j: true): without them an acknowledged insert may be lost when the database is
        // killed (MongoDB's w:1 default; SecantusDB lost the last acknowledged insert of each connection).
        var configuration = HubConfiguration(
            mongoURI: server.uri + "?journal=true", port: 0, databasePoolSize: 4,
            serverSelectionTimeoutMS: 1_000, writeDeadline: writeDeadline,
            relay: RelayConfiguration(concurrency: 0))
        // The approval policy's default rules off, as in `HubHarness`: these sends to a Forced subject go at once.
        configuration.approval = ApprovalPolicy(defaults: false)
        let app = try await buildApplication(configuration: configuration)
        try await app.test(.live) { client in
            try await body(OutageHub(server: server, client: client, port: try #require(client.port)))
        }
        await server.kill()
    }

    func get(_ uri: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .get)
    }

    func post(title: String, key: String? = nil) async throws -> TestResponse {
        try await client.execute(
            uri: "/message", method: .post, headers: Self.headers(key: key),
            body: ByteBuffer(string: MessageRoutesTests.body(title: title)))
    }

    func post(title: String, key: String?, on connection: TestClient) async throws -> TestClient.Response {
        try await connection.execute(
            .init(
                "/message", method: .post, headers: Self.headers(key: key),
                body: ByteBuffer(string: MessageRoutesTests.body(title: title))))
    }

    static func headers(key: String?, caller: HubHarness.Caller = .admin) -> HTTPFields {
        var headers = caller.headers
        headers[.contentType] = "application/json"
        if let key { headers[.idempotencyKey] = key }
        return headers
    }

    /// What one POST got.
    struct Outcome: Sendable {
        let title: String
        let status: HTTPResponse.Status
        let code: String?
        let retryAfter: String?
    }

    /// `clients` connections posting messages of unique titles one after another for `duration`, while `fault`
    /// runs beside them.
    func postConcurrently(
        clients: Int, during duration: Duration,
        fault: @escaping @Sendable () async throws -> Void
    ) async throws -> [Outcome] {
        let clock = ContinuousClock()
        return try await withThrowingTaskGroup(of: [Outcome].self) { group in
            for client in 0..<clients {
                group.addTask {
                    try await TestClient.withClient(host: "127.0.0.1", port: port) { connection in
                        var outcomes: [Outcome] = []
                        let started = clock.now
                        while clock.now - started < duration {
                            let title = "c\(client)-\(outcomes.count)"
                            let response = try await post(title: title, key: nil, on: connection)
                            let code = response.errorCode
                            outcomes.append(
                                Outcome(
                                    title: title, status: response.status, code: code,
                                    retryAfter: response.headers[.retryAfter]))
                            if response.status != .created { try await Task.sleep(for: .milliseconds(100)) }
                        }
                        return outcomes
                    }
                }
            }
            group.addTask {
                try await fault()
                return []
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    /// Waits until `/readyz` is 200 (at most 15 s).
    func waitUntilReady() async throws {
        for _ in 0..<60 {
            if try await get("/readyz").status == .ok { return }
            try await Task.sleep(for: .milliseconds(250))
        }
        Issue.record("the hub did not become ready again")
    }

    /// How many stored messages have each title.
    func storedTitles() async throws -> [String: Int] {
        let pool = try MongoClientPool(configuration: MongoConfiguration(uri: server.uri))
        let documents = try await pool.database().collection(CollectionName.message).find([:])
        await pool.close()
        return documents.reduce(into: [:]) { $0[$1["title"]?.stringValue ?? "", default: 0] += 1 }
    }

    func stored(title: String) async throws -> Int {
        try await storedTitles()[title] ?? 0
    }
}

extension HubHarness {
    /// Sends a JSON POST with an `Idempotency-Key`.
    func request(
        _ method: HTTPRequest.Method, _ uri: String, as caller: Caller, json: String,
        idempotencyKey: String
    ) async throws -> TestResponse {
        var headers = caller.headers
        headers[.contentType] = "application/json"
        headers[.idempotencyKey] = idempotencyKey
        return try await client.execute(uri: uri, method: method, headers: headers, body: ByteBuffer(string: json))
    }
}

extension TestClient.Response {
    /// The error code of an error body.
    var errorCode: String? {
        (try? JSONParser().document(from: (body ?? ByteBuffer()).readableBytesView))?[path: "error.code"]?.stringValue
    }
}

/// Counts by name that concurrent tasks record.
final class Tally: Sendable {
    private let values = Mutex<[String: Int]>([:])
    var counts: [String: Int] { values.withLock { $0 } }
    func record(_ name: String, _ count: Int) { values.withLock { $0[name] = count } }
}
