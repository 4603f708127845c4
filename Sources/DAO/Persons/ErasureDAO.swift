import HubTime
import Mongo

/// An erasure of a person's data as its job records it.
public struct Erasure: Sendable, Equatable {
    /// The job's states: `running` until every step is done, then `done`.
    public enum State: String, Sendable { case running, done }
    /// What happens to the person's room posts (`?posts=`): deleted, or kept without their author.
    public enum Posts: String, Sendable, CaseIterable { case delete, anonymise }

    /// The keyed hash of the person id: the job's `_id`, all that stays of the person once it is done.
    public var pseudonym: String
    /// The person id, while the job runs (removed when it is done).
    public var person: String?
    public var state: State
    public var posts: Posts
    /// The next step to run (`PersonErasure.steps`), counting from 0.
    public var step: Int
    /// The person's devices, read once before any is deleted, so a job that resumes still erases what names them.
    public var devices: [ObjectID]
    /// How many documents each step removed or changed, by collection.
    public var counts: [String: Int64]
    public var startedAt: Int64
    public var finishedAt: Int64?
    /// The claim's lease while a worker runs it.
    public var lease: String?
    /// How many times a step failed and the job was handed back (each retry waits longer).
    public var failures: Int
    /// What the last failure was (an error code, never data), while the job runs.
    public var lastError: String?

    init?(document: BSONDocument) {
        guard let pseudonym = document["_id"]?.stringValue, let state = State(rawValue: document.string("state"))
        else { return nil }
        self.pseudonym = pseudonym
        self.person = document["person"]?.stringValue
        self.state = state
        self.posts = Posts(rawValue: document.string("posts")) ?? .delete
        self.step = Int(document["step"]?.int64Value ?? 0)
        self.devices = (document["devices"]?.arrayValue ?? []).compactMap(\.objectIDValue)
        var counts: [String: Int64] = [:]
        for element in document["counts"]?.documentValue?.elements ?? [] {
            counts[element.key] = element.value.int64Value ?? 0
        }
        self.counts = counts
        self.startedAt = document["started_at"]?.int64Value ?? 0
        self.finishedAt = document["finished_at"]?.int64Value
        self.lease = document["lease_owner"]?.stringValue
        self.failures = Int(document["failures"]?.int64Value ?? 0)
        self.lastError = document["last_error"]?.stringValue
    }
}

/// Erasure jobs, in `erasures`: one document per erased person under the keyed hash of their id, running until its
/// last step and then kept as `done` without the id (so `GET /person/:personID/erasure` answers later, and nothing
/// of the person stays). Workers claim running jobs under a lease (`LeasedQueue`), so a job runs once across
/// replicas and one whose worker died is taken up again where its last recorded step left it.
public struct ErasureDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// The due jobs, the most overdue first (running jobs only carry `due_at`).
    static let indexes = [IndexModel(keys: ["due_at": 1], name: "due_at")]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.erasures)
        self.now = now
    }

    var queue: LeasedQueue {
        LeasedQueue(collection: collection, prefix: "", dueField: "due_at") { ["due_at": ["$lte": .int64($0)]] }
    }

    /// Starts (or starts again, when an earlier one is done) the erasure of `person`; a running one is left as it is.
    /// Answers the job as stored.
    /// - Throws: `DAOError`.
    public func start(person: String, pseudonym: String, posts: Erasure.Posts) async throws -> Erasure {
        let time = now()
        do {
            _ = try await mapErrors {
                try await collection.updateOne(
                    ["_id": .string(pseudonym), "state": ["$ne": "running"]],
                    [
                        "$set": [
                            "person": .string(person), "state": "running", "posts": .string(posts.rawValue),
                            "step": .int64(0), "devices": [], "counts": [:], "started_at": .int64(time),
                            "due_at": .int64(time),
                        ],
                        "$unset": ["finished_at": ""],
                    ],
                    options: UpdateOptions(upsert: true))
            }
        } catch let error as DAOError where error.code == .duplicate {
            // A running job has the id: the upsert's insert collided with it, and it goes on as it is.
        }
        guard let job = try await find(pseudonym: pseudonym) else {
            throw DAOError(.unavailable, "the erasure just recorded cannot be read back")
        }
        return job
    }

    /// The job of the person whose keyed hash is `pseudonym`, if any.
    /// - Throws: `DAOError`.
    public func find(pseudonym: String) async throws -> Erasure? {
        try await mapErrors { try await collection.findOne(["_id": .string(pseudonym)]) }.flatMap(Erasure.init)
    }

    /// Claims up to `limit` running jobs due now for `owner` under a lease of `leaseMS`.
    /// - Throws: `DAOError`.
    public func claim(owner: String, leaseMS: Int64, limit: Int) async throws -> [Erasure] {
        let claim = try await mapErrors {
            try await queue.claim(owner: owner, now: now(), leaseMS: leaseMS, limit: limit)
        }
        return claim?.documents.compactMap(Erasure.init) ?? []
    }

    /// Records `job`'s next step (and the devices it read, and the counts so far) while its lease holds it, the lease
    /// moved on by `leaseMS`; whether it still held.
    /// - Throws: `DAOError`.
    public func advance(_ job: Erasure, to step: Int, devices: [ObjectID], counts: [String: Int64], leaseMS: Int64)
        async throws -> Bool
    {
        guard let lease = job.lease else { return false }
        return try await mapErrors {
            try await queue.update(
                .string(job.pseudonym), lease: lease,
                [
                    "$set": [
                        "step": .int64(Int64(step)), "devices": .array(devices.map(BSONValue.objectID)),
                        "counts": .document(Self.counts(counts)), "lease_until": .int64(now() + leaseMS),
                    ]
                ])
        }
    }

    /// Records `job` done while its lease holds it: the person id and devices removed, no longer due.
    /// - Throws: `DAOError`.
    public func finish(_ job: Erasure, counts: [String: Int64]) async throws -> Bool {
        guard let lease = job.lease else { return false }
        return try await mapErrors {
            try await queue.update(
                .string(job.pseudonym), lease: lease,
                [
                    "$set": [
                        "state": "done", "finished_at": .int64(now()), "counts": .document(Self.counts(counts)),
                    ],
                    "$unset": .document(queue.endingLease(["person": "", "devices": "", "due_at": ""])),
                ])
        }
    }

    /// Hands `job` back to be taken again at `retryAt` (a step failed with `error`, an error code), counting the
    /// failure.
    /// - Throws: `DAOError`.
    public func retry(_ job: Erasure, at retryAt: Int64, error: String) async throws {
        guard let lease = job.lease else { return }
        _ = try await mapErrors {
            try await queue.update(
                .string(job.pseudonym), lease: lease,
                [
                    "$set": ["due_at": .int64(retryAt), "last_error": .string(error)],
                    "$inc": ["failures": .int64(1)], "$unset": .document(queue.endingLease()),
                ])
        }
    }

    private static func counts(_ counts: [String: Int64]) -> BSONDocument {
        BSONDocument(counts.sorted { $0.key < $1.key }.map { (key: $0.key, value: BSONValue.int64($0.value)) })
    }
}
