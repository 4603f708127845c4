import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// A running hub on an ephemeral port over a database of the test's own, with known callers.
struct HubHarness: Sendable {
    let database: MongoDatabase
    let client: any TestClientProtocol

    /// The relay's backlog bound in tests that are not about it (RelayBacklogTests set theirs): none, since a loaded
    /// two-core machine may put a relay more than `RELAY_MAX_BACKLOG_SECONDS` behind and the hub would refuse sends.
    static let testBacklogBound: Duration? = nil

    /// The relay of a hub that sends in log mode, without a backlog bound.
    static var logModeRelay: RelayConfiguration {
        var relay = RelayConfiguration()
        relay.maxBacklog = testBacklogBound
        return relay
    }

    /// API tokens and passwords the harness created before the hub started.
    static let adminToken = "msi_test-admin-token-0123456789abcdef0123456789"
    static let communicatorToken = "msi_test-communicator-token-0123456789abcdef01"
    static let annPassword = "ann-password-1"

    /// Starts the real application (`buildApplication`) and runs `body` against it over HTTP. The approval rules are
    /// a new deployment's (the default rules off) unless a test asks for others (`approval`, stored at the start).
    static func with(
        _ test: String = #function,
        seed: @Sendable (MongoDatabase) async throws -> Void = { _ in },
        relay: RelayConfiguration = HubHarness.logModeRelay,
        devices: DeviceConfiguration = DeviceConfiguration(),
        persons: PersonConfiguration = PersonConfiguration(),
        webhooks: WebhookConfiguration = WebhookConfiguration(),
        approval: ApprovalPolicy = ApprovalPolicy(),
        portal: PortalConfiguration = PortalConfiguration(),
        _ body: @Sendable (HubHarness) async throws -> Void
    ) async throws {
        try await TestDatabase.with(test) { database in
            try await DatabaseIndexes.ensure(in: database)
            // Tokens with known secrets, stored as `msi-hub token create` stores them.
            let tokens = TokenDAO(database: database)
            _ = try await tokens.add(
                name: "admin-script", role: .admin, secretHash: Credentials.hash(token: adminToken))
            _ = try await tokens.add(
                name: "bulletin-bot", role: .communicator, secretHash: Credentials.hash(token: communicatorToken))
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4)
            try await services.accounts.addUser("ann", role: .communicator, password: annPassword)
            try await seed(database)
            // A write deadline far above the production default: these tests are not about hung databases, and a
            // loaded machine can make the test database take seconds (WriteOutcomeTests set their own).
            var configuration = HubConfiguration(
                mongoURI: try TestDatabase.uri(), port: 0, databasePoolSize: 4,
                writeDeadline: .seconds(30), relay: relay, devices: devices)
            configuration.persons = persons
            configuration.webhooks = webhooks
            configuration.approval = approval
            configuration.portal = portal
            let app = try await buildApplication(configuration: configuration, databaseName: database.name)
            try await app.test(.live) { client in
                try await body(HubHarness(database: database, client: client))
            }
        }
    }

    /// Seeds the legacy channel fixture as the legacy hub wrote it.
    static let legacy: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await database.collection(CollectionName.icube).insertOne(try Fixtures.legacyChannel())
    }

    /// Who makes a request.
    enum Caller: Sendable {
        case anonymous, admin, communicator, token(String), basic(String, String)

        var headers: HTTPFields {
            switch self {
            case .anonymous: [:]
            case .admin: [.authorization: "Bearer \(HubHarness.adminToken)"]
            case .communicator: [.authorization: "Bearer \(HubHarness.communicatorToken)"]
            case .token(let token): [.authorization: "Bearer \(token)"]
            case .basic(let user, let password):
                [.authorization: "Basic \(Data("\(user):\(password)".utf8).base64EncodedString())"]
            }
        }
    }

    /// Sends a request; `json` is sent as `application/json` unless `contentType` says otherwise.
    @discardableResult
    func request(
        _ method: HTTPRequest.Method, _ uri: String, as caller: Caller = .anonymous, json: String? = nil,
        contentType: String = "application/json"
    ) async throws -> TestResponse {
        var headers = caller.headers
        if json != nil { headers[.contentType] = contentType }
        return try await client.execute(
            uri: uri, method: method, headers: headers,
            body: json.map { ByteBuffer(string: $0) })
    }

    /// The raw stored channel document.
    func channel(_ id: ObjectID) async throws -> BSONDocument? {
        try await database.collection(CollectionName.icube).findOne(["_id": .objectID(id)])
    }

    /// Everything stored in the cube, to check that a refused request changed nothing.
    func cubeSnapshot() async throws -> [BSONDocument] {
        try await database.collection(CollectionName.icube).find([:], options: FindOptions(sort: ["_id": 1]))
    }
}

extension TestResponse {
    /// The body parsed as a JSON object through our own parser (ObjectIds arrive as hex strings).
    func json() throws -> BSONDocument { try JSONParser().document(from: body.readableBytesView) }

    /// The body parsed as any JSON value.
    func jsonValue() throws -> BSONValue { try JSONParser().value(from: body.readableBytesView) }

    /// The body as text.
    var text: String { String(buffer: body) }

    /// The error code of an error body.
    var errorCode: String? { (try? json())?[path: "error.code"]?.stringValue }
}
