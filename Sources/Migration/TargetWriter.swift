import Mongo

/// Writes normalised documents into one collection of the target, idempotently.
///
/// A document is inserted when the target has no document with its `_id`; one the target already
/// holds with the same content is left alone (so a second run changes nothing); one it holds with
/// other content is a conflict and the target's is kept. Each batch is one `find` by `_id` and one
/// unordered `insertMany`, so an interrupted run leaves whole documents and the next run finishes it.
struct TargetWriter: Sendable {
    /// The target collection.
    let collection: MongoCollection
    /// Count what would happen, write nothing.
    let dryRun: Bool

    /// Writes one batch (documents of distinct `_id`s) and says what became of each document.
    /// - Throws: `MigrationError.database`.
    func write(_ candidates: [BSONDocument]) async throws -> (CollectionCounts, [MigrationConflict]) {
        var counts = CollectionCounts()
        var conflicts: [MigrationConflict] = []
        func conflict(_ document: BSONDocument, _ reason: MigrationConflict.Reason) {
            counts.conflicts += 1
            conflicts.append(
                MigrationConflict(
                    collection: collection.name,
                    id: (document["_id"] ?? .null).legacyJSON, reason: reason))
        }
        let ids = candidates.map { $0["_id"] ?? .null }
        let existing = try await mapDatabaseErrors("cannot read the target's \(collection.name)") {
            try await collection.find(["_id": ["$in": .array(ids)]])
        }
        let stored = Dictionary(
            existing.map { (DocumentKey($0["_id"] ?? .null), $0) },
            uniquingKeysWith: { first, _ in first })
        var missing: [BSONDocument] = []
        for document in candidates {
            if let current = stored[DocumentKey(document["_id"] ?? .null)] {
                if DocumentContent.same(current, document) {
                    counts.unchanged += 1
                } else {
                    conflict(document, .targetDiffers)
                }
            } else {
                missing.append(document)
            }
        }
        guard !dryRun, !missing.isEmpty else {
            counts.inserted += missing.count
            return (counts, conflicts)
        }
        do {
            try await collection.insertMany(missing, ordered: false)
            counts.inserted += missing.count
        } catch let error as MongoError where error.code == .duplicateKey {
            // Someone else wrote one of these `_id`s meanwhile, or a unique index (msi_key) refused one:
            // the unordered insert wrote the others; find out which is which, one by one.
            for document in missing {
                switch try await insertOne(document) {
                case .inserted: counts.inserted += 1
                case .unchanged: counts.unchanged += 1
                case .conflict(let reason): conflict(document, reason)
                }
            }
        } catch let error as MongoError {
            throw MigrationError(.database, "cannot write the target's \(collection.name)", underlying: error)
        }
        return (counts, conflicts)
    }

    private enum Outcome {
        case inserted, unchanged, conflict(MigrationConflict.Reason)
    }

    /// Inserts one document after a batch failed, telling apart an `_id` already there from another key.
    private func insertOne(_ document: BSONDocument) async throws -> Outcome {
        try await mapDatabaseErrors("cannot write the target's \(collection.name)") {
            do {
                try await collection.insertOne(document)
                return .inserted
            } catch let error as MongoError where error.code == .duplicateKey {
                guard let current = try await collection.findOne(["_id": document["_id"] ?? .null]) else {
                    return .conflict(.duplicateKey)
                }
                // Written by the failed batch itself (we saw no such `_id` before it), or by someone else.
                return DocumentContent.same(current, document) ? .inserted : .conflict(.targetDiffers)
            }
        }
    }
}
