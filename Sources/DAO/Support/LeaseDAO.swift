import HubTime
import Mongo

/// Named leases shared by every replica in `leases`: one document per name saying which process holds it and
/// until when, taken and renewed with one atomic upsert. A job that must run in one process at a time (the
/// subscription reconciler of an FCM project) runs while its process holds the job's lease.
public struct LeaseDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.leases)
        self.now = now
    }

    /// Takes `name` for `owner` for `leaseMS` when nobody holds it or `owner` does (a renewal); returns until when
    /// (Unix ms) `owner` holds it, or nil when another process does.
    /// - Throws: `DAOError`.
    public func hold(_ name: String, owner: String, leaseMS: Int64) async throws -> Int64? {
        let time = now(), until = time + leaseMS
        let free: BSONDocument = [
            "_id": .string(name), "$or": [["until": ["$lt": .int64(time)]], ["owner": .string(owner)]],
        ]
        do {
            let document = try await mapErrors {
                try await collection.findOneAndUpdate(
                    free, ["$set": ["owner": .string(owner), "until": .int64(until)]],
                    options: FindOneAndUpdateOptions(returnNew: true, upsert: true))
            }
            return document?["owner"]?.stringValue == owner ? until : nil
        } catch let error as DAOError where error.code == .duplicate {
            // Held by another: the upsert found no free lease and could not insert a second one.
            return nil
        }
    }

    /// Gives `name` up when `owner` holds it, so another process may take it at once.
    /// - Throws: `DAOError`.
    public func release(_ name: String, owner: String) async throws {
        _ = try await mapErrors { try await collection.deleteOne(["_id": .string(name), "owner": .string(owner)]) }
    }
}
