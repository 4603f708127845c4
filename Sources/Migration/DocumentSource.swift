import Mongo

/// Where a run reads one collection's legacy documents from, a batch at a time.
protocol DocumentSource {
    /// How much of the source has been read, from 0 to 1, when that is known.
    var fractionDone: Double? { get }
    /// Up to `count` next documents; empty when the source is exhausted.
    mutating func next(_ count: Int) async throws -> [BSONDocument]
    /// Releases what the source holds open.
    func close()
}

extension ExportFileReader: DocumentSource {
    var fractionDone: Double? { size > 0 ? Double(consumed) / Double(size) : nil }
}

/// A collection of the legacy database, read in `_id` order and never written.
///
/// ObjectId `_id`s (nearly all of a legacy database) are paged by range (`$gt` the last one read),
/// which stays fast at any size; the few documents with other `_id`s are paged after them.
struct CollectionSource: DocumentSource {
    private enum Phase {
        case objectIDs(after: ObjectID?)
        case others(skip: Int64)
        case done
    }

    let collection: MongoCollection
    /// How many documents the collection held when the run began.
    let total: Int64
    private var phase = Phase.objectIDs(after: nil)
    private var read: Int64 = 0

    /// A source over `collection`, counting its documents for progress.
    /// - Throws: `MigrationError.database`.
    static func open(_ collection: MongoCollection) async throws -> CollectionSource {
        let total = try await mapDatabaseErrors("cannot count the source's \(collection.name)") {
            try await collection.countDocuments()
        }
        return CollectionSource(collection: collection, total: total)
    }

    private init(collection: MongoCollection, total: Int64) {
        self.collection = collection
        self.total = total
    }

    var fractionDone: Double? { total > 0 ? min(1, Double(read) / Double(total)) : nil }

    mutating func next(_ count: Int) async throws -> [BSONDocument] {
        let documents = try await mapDatabaseErrors("cannot read the source's \(collection.name)") {
            try await nextPage(count)
        }
        read += Int64(documents.count)
        return documents
    }

    private mutating func nextPage(_ count: Int) async throws -> [BSONDocument] {
        while true {
            switch phase {
            case .objectIDs(let after):
                var range: BSONDocument = ["$type": 7]
                if let after { range["$gt"] = .objectID(after) }
                let page = try await collection.find(
                    ["_id": .document(range)],
                    options: FindOptions(sort: ["_id": 1], limit: Int64(count)))
                guard let last = page.last?["_id"]?.objectIDValue else {
                    phase = .others(skip: 0)
                    continue
                }
                phase = .objectIDs(after: last)
                return page
            case .others(let skip):
                let page = try await collection.find(
                    ["_id": ["$not": ["$type": 7]]],
                    options: FindOptions(sort: ["_id": 1], skip: skip, limit: Int64(count)))
                phase = page.isEmpty ? .done : .others(skip: skip + Int64(page.count))
                return page
            case .done:
                return []
            }
        }
    }

    func close() {}
}
