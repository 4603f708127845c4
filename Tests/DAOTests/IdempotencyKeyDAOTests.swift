import DAO
import Mongo
import MongoTestSupport
import Testing

/// The `Idempotency-Key` records against the test database: concurrent requests' records share insert commands,
/// and a key already recorded is still told apart (the same request again, or another one) inside a shared command.
@Suite("Idempotency keys")
struct IdempotencyKeyDAOTests {
    static func message(_ title: String) -> BSONDocument {
        ["_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "title": .string(title)]
    }

    static var deadline: ContinuousClock.Instant { .now.advanced(by: .seconds(30)) }

    /// A claim as a test compares it: "claimed", "earlier: <the earlier message's title>" or "other request".
    static func described(_ claim: IdempotencyKeyDAO.Claim) -> String {
        switch claim {
        case .claimed: "claimed"
        case .earlier(let message): "earlier: \(message["title"]?.stringValue ?? "?")"
        case .otherRequest: "other request"
        }
    }

    @Test func concurrentRecordsShareCommandsAndAReusedKeyIsToldApartInsideABatch() async throws {
        try await TestDatabase.with { database in
            let keys = IdempotencyKeyDAO(database: database)
            let first = Self.message("first")
            let new = try await keys.claim(
                sender: "bot", key: "k-0", fingerprint: "f-0", message: first, deadline: Self.deadline)
            #expect(Self.described(new) == "claimed")

            // 48 new keys at once go in fewer commands than records (one in flight, the rest gathered behind it).
            try await withThrowingTaskGroup(of: String.self) { group in
                for index in 1...48 {
                    group.addTask {
                        Self.described(
                            try await keys.claim(
                                sender: "bot", key: "new-\(index)", fingerprint: "f", message: Self.message("new"),
                                deadline: Self.deadline))
                    }
                }
                for try await claim in group { #expect(claim == "claimed") }
            }
            #expect(keys.insertCommands < 1 + 48, "\(keys.insertCommands) insert commands")

            // 48 more new keys, the same request again, and another request under the same key, all at once: a
            // command with a key recorded already fails, and its records are inserted one by one.
            let claims = try await withThrowingTaskGroup(of: (String, String).self) { group in
                for index in 1...48 {
                    group.addTask {
                        let key = "k-\(index)"
                        let claim = try await keys.claim(
                            sender: "bot", key: key, fingerprint: "f-\(index)", message: Self.message(key),
                            deadline: Self.deadline)
                        return (key, Self.described(claim))
                    }
                }
                group.addTask {
                    let claim = try await keys.claim(
                        sender: "bot", key: "k-0", fingerprint: "f-0", message: Self.message("again"),
                        deadline: Self.deadline)
                    return ("again", Self.described(claim))
                }
                group.addTask {
                    let claim = try await keys.claim(
                        sender: "bot", key: "k-0", fingerprint: "another body", message: Self.message("other"),
                        deadline: Self.deadline)
                    return ("other", Self.described(claim))
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            #expect(Set(claims.filter { $0.value == "claimed" }.keys) == Set((1...48).map { "k-\($0)" }))
            // The same request again is answered with the first request's message; another body is refused.
            #expect(claims["again"] == "earlier: first")
            #expect(claims["other"] == "other request")
            #expect(try await database.collection(CollectionName.idempotencyKeys).countDocuments() == 1 + 48 + 48)
        }
    }
}
