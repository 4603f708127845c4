import HubTime
import Mongo

/// A run's record in the target's `migrations` collection: when it ran, how far it got, its report.
///
/// A run that stops early (a batch limit, cancellation, a crash) leaves its record `running` or
/// `interrupted`; the next run from the same source says it resumes it. Resuming needs no more than
/// running again: writes are idempotent, so what the earlier run wrote is found unchanged.
struct MigrationLog: Sendable {
    /// msi-hub's own collection of migration runs (the legacy hub has no such collection).
    static let collectionName = "migrations"

    let collection: MongoCollection
    /// This run's `_id`.
    let runID = ObjectID()

    /// The log in `database`.
    init(database: MongoDatabase) {
        collection = database.collection(Self.collectionName)
    }

    /// Records the start of a run from `source`; true when the last run from it did not complete.
    /// - Throws: `MigrationError.database`.
    func begin(source: String) async throws -> Bool {
        try await mapDatabaseErrors("cannot record the run in \(Self.collectionName)") {
            let last = try await collection.findOne(["source": .string(source)], sort: ["started_at": -1, "_id": -1])
            try await collection.insertOne([
                "_id": .objectID(runID), "source": .string(source), "state": "running",
                "started_at": .int64(UnixTime.nowMilliseconds()),
            ])
            return last.map { $0["state"]?.stringValue != "completed" } ?? false
        }
    }

    /// Records how far the run got in `collectionName`.
    /// - Throws: `MigrationError.database`.
    func checkpoint(_ collectionName: String, counts: CollectionCounts) async throws {
        let progress: BSONDocument = [
            "read": .int64(Int64(counts.read)), "inserted": .int64(Int64(counts.inserted)),
            "unchanged": .int64(Int64(counts.unchanged)), "conflicts": .int64(Int64(counts.conflicts)),
        ]
        try await mapDatabaseErrors("cannot record the run in \(Self.collectionName)") {
            try await collection.updateOne(
                ["_id": .objectID(runID)],
                [
                    "$set": [
                        "progress.\(collectionName)": .document(progress),
                        "updated_at": .int64(UnixTime.nowMilliseconds()),
                    ]
                ])
        }
    }

    /// Records the end of the run and its report.
    /// - Throws: `MigrationError.database`.
    func finish(_ report: MigrationReport) async throws {
        try await mapDatabaseErrors("cannot record the run in \(Self.collectionName)") {
            try await collection.updateOne(
                ["_id": .objectID(runID)],
                [
                    "$set": [
                        "state": .string(report.completed ? "completed" : "interrupted"),
                        "finished_at": .int64(UnixTime.nowMilliseconds()),
                        "report": .document(report.document),
                    ]
                ])
        }
    }
}
