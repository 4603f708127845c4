import CMongo

/// One update of a bulk write: `update` applied to the first document (or every document) matching `filter`.
public struct UpdateStatement: Sendable {
    public var filter: BSONDocument
    public var update: BSONDocument
    public var options: UpdateOptions
    /// Apply to every match rather than the first.
    public var many: Bool

    public init(
        filter: BSONDocument, update: BSONDocument, options: UpdateOptions = UpdateOptions(),
        many: Bool = false
    ) {
        self.filter = filter
        self.update = update
        self.options = options
        self.many = many
    }
}

extension MongoCollection {
    /// Applies many updates in one round trip (a bulk write, unordered: one statement's failure does not
    /// stop the others) and returns the totals.
    /// - Throws: the mapped `MongoError` when the command or any statement failed.
    @discardableResult
    public func bulkUpdate(_ statements: [UpdateStatement]) async throws -> UpdateResult {
        guard !statements.isEmpty else { return UpdateResult(matchedCount: 0, modifiedCount: 0) }
        let bulkOptions: BSONDocument = ["ordered": false]
        let reply = try await withCollection { collection in
            let bulk = bulkOptions.withBSONPointer { mongoc_collection_create_bulk_operation_with_opts(collection, $0) }
            guard let bulk else { throw MongoError(.invalidArgument, "cannot create a bulk operation") }
            defer { mongoc_bulk_operation_destroy(bulk) }
            for statement in statements {
                var error = bson_error_t()
                let added = BSONPointers.with(statement.filter, statement.update, statement.options.document) {
                    filter, update, options in
                    statement.many
                        ? mongoc_bulk_operation_update_many_with_opts(bulk, filter, update, options, &error)
                        : mongoc_bulk_operation_update_one_with_opts(bulk, filter, update, options, &error)
                }
                guard added else { throw MongoError(error) }
            }
            return try BSONPointers.reply { reply, error in
                mongoc_bulk_operation_execute(bulk, reply, error) != 0
            }
        }
        return UpdateResult(
            matchedCount: reply["nMatched"]?.int64Value ?? 0,
            modifiedCount: reply["nModified"]?.int64Value ?? 0,
            upsertedID: nil
        )
    }
}
