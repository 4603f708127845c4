import CMongo

/// A database of a pool: where collections live and commands run.
public struct MongoDatabase: Sendable {
    /// The pool whose clients run this database's operations.
    public let pool: MongoClientPool
    /// The database's name.
    public let name: String

    /// The collection called `name` in this database.
    public func collection(_ name: String) -> MongoCollection {
        MongoCollection(pool: pool, databaseName: self.name, name: name)
    }

    /// Runs a command and returns the server's reply.
    /// - Throws: the mapped `MongoError`.
    public func runCommand(_ command: BSONDocument) async throws -> BSONDocument {
        let name = self.name
        return try await pool.withClient { client in
            try command.withBSONPointer { command in
                try BSONPointers.reply { reply, error in
                    mongoc_client_command_with_opts(client, name, command, nil, nil, reply, error)
                }
            }
        }
    }

    /// Drops the whole database (tests use it to clean up after themselves).
    /// - Throws: the mapped `MongoError`.
    public func drop() async throws {
        _ = try await runCommand(["dropDatabase": 1])
    }

    /// The names of the database's collections.
    /// - Throws: the mapped `MongoError`.
    public func collectionNames() async throws -> [String] {
        let reply = try await runCommand(["listCollections": 1, "nameOnly": true])
        let batch = reply[path: "cursor.firstBatch"]?.arrayValue ?? []
        return batch.compactMap { $0.documentValue?["name"]?.stringValue }
    }
}
