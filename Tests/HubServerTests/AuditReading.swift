import DAO
import HubCore
import Mongo

/// The audit log as its readers see it (the portal, `AuditLog.entries`): each entry's fields with the pseudonyms
/// opened to clear names while their keys exist, oldest first. Tests asserting who did what read this; tests about the
/// stored form read the collection.
enum AuditReading {
    /// Every entry, revealed, as `{seq, at, actor, action, target, change?, subjects?}` documents, by `seq`.
    static func entries(_ database: MongoDatabase, matching filter: AuditFilter = AuditFilter()) async throws
        -> [BSONDocument]
    {
        let log = AuditLog(database: database)
        var before: Int64?
        var found: [AuditEntry] = []
        repeat {
            let page = try await log.entries(filter, before: before, limit: AuditLog.maximumPage)
            found += page.entries
            before = page.next
        } while before != nil
        return found.reversed().map { entry in
            var document: BSONDocument = [
                "seq": .int64(entry.seq), "at": .int64(entry.at), "actor": .document(entry.actor.document),
                "action": .string(entry.action), "target": .document(entry.target.document),
            ]
            if let change = entry.change { document["change"] = .document(change) }
            return document
        }
    }

    /// The first entry, revealed, whose `action` is `action`.
    static func first(_ database: MongoDatabase, action: String) async throws -> BSONDocument? {
        try await entries(database, matching: AuditFilter(actionPrefix: action)).first {
            $0["action"] == .string(action)
        }
    }
}
