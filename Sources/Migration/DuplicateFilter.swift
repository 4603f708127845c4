import Mongo

/// Remembers the `_id`s (and a unique field's values) a run has seen, to catch two source documents
/// that normalise to one `_id` (a 24-hex string and the ObjectId it spells) or share a message's
/// `msi_key`; the first one read wins. A dry run reports these as a real run would.
struct DuplicateFilter {
    /// A field the target's unique index covers (`msi_key` for messages), or nil.
    let uniqueField: String?
    private var seenIDs: Set<DocumentKey> = []
    private var seenValues: Set<DocumentKey> = []

    /// A filter for documents whose `uniqueField` must also be unique.
    init(uniqueField: String?) {
        self.uniqueField = uniqueField
    }

    /// The documents that are new to the run, and conflicts for the others.
    mutating func admit(_ documents: [BSONDocument], collection: String) -> ([BSONDocument], [MigrationConflict]) {
        var admitted: [BSONDocument] = []
        var conflicts: [MigrationConflict] = []
        admitted.reserveCapacity(documents.count)
        for document in documents {
            let id = document["_id"] ?? .null
            let idKey = DocumentKey(id)
            let valueKey = uniqueField.flatMap { document[$0] }.map(DocumentKey.init)
            if seenIDs.contains(idKey) {
                conflicts.append(MigrationConflict(collection: collection, id: id.legacyJSON, reason: .duplicateID))
            } else if let valueKey, seenValues.contains(valueKey) {
                conflicts.append(MigrationConflict(collection: collection, id: id.legacyJSON, reason: .duplicateKey))
            } else {
                seenIDs.insert(idKey)
                if let valueKey { seenValues.insert(valueKey) }
                admitted.append(document)
            }
        }
        return (admitted, conflicts)
    }
}
