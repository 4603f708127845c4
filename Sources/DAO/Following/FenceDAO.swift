import HubTime
import Mongo

/// Fences: how a hub process learns that its change stream has caught up with the database.
///
/// A process that keeps copies of collections in memory follows them with one change stream. An
/// empty wait on that stream does not prove the stream has read everything written so far (a busy
/// server may still be behind), so the process writes a fence, a numbered write to its own document in
/// `fences`, and watches for it: the stream delivers changes in order, so once the fence arrives every
/// change committed before the fence was written has arrived too.
public struct FenceDAO: Sendable {
    let collection: MongoCollection
    /// This process's fence document.
    public let id: ObjectID

    public init(database: MongoDatabase, id: ObjectID = ObjectID()) {
        self.collection = database.collection(CollectionName.fences)
        self.id = id
    }

    /// Fence documents of processes gone for an hour are removed (`ExpirySweepDAO`).
    static let expiry = ExpiringCollection(
        CollectionName.fences, field: "at", afterSeconds: 3_600, retiredTTLIndex: "at")
    static let indexes = [expiry.index]

    /// Writes fence number `number`.
    /// - Throws: `DAOError`.
    public func write(_ number: Int64) async throws {
        try await mapErrors {
            _ = try await collection.updateOne(
                ["_id": .objectID(id)],
                ["$set": ["fence": .int64(number), "at": .datetime(UnixTime.nowMilliseconds())]],
                options: UpdateOptions(upsert: true))
        }
    }

    /// The change stream stage that keeps changes to `collections` and to this process's fence.
    public func changeFilter(collections: [String]) -> BSONDocument {
        [
            "$match": [
                "$or": [
                    ["ns.coll": ["$in": .array(collections.map(BSONValue.string))]],
                    ["ns.coll": .string(CollectionName.fences), "documentKey._id": .objectID(id)],
                ]
            ]
        ]
    }

    /// The fence number a change carries when it is a write of this process's fence, else nil.
    public func fenceNumber(in change: BSONDocument) -> Int64? {
        guard change[path: "ns.coll"]?.stringValue == CollectionName.fences,
            change[path: "documentKey._id"]?.objectIDValue == id
        else { return nil }
        return (change[path: "updateDescription.updatedFields.fence"] ?? change[path: "fullDocument.fence"])?.int64Value
    }
}
