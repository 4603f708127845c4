import DAO
import HubTime
import Logging
import Mongo

/// A person's data on request, the one home of the school's answers to an access request and an erasure request:
/// `export` writes everything the hub holds on a person as one JSON document, a page at a time; `erase` starts a
/// durable erasure job (`ErasureDAO`) that workers on any replica run step by step, each step idempotent and recorded,
/// so a job a crash interrupts resumes where it stopped and never runs twice at once. With `ERASURE_BLOCK_DAYS`, an
/// erased person's keyed hash is kept that long, and a roster sync does not add them back (`blocked`).
public struct PersonDataService: Sendable {
    let data: PersonDataDAO
    let erasures: ErasureDAO
    let groups: GroupDAO
    let devices: DeviceService
    /// The keyed hashes that name erased persons (the audit log's).
    public var pseudonyms: AuditPseudonyms { audit.subjects.pseudonyms }
    let audit: AuditLog
    /// How long an erased person stays blocked, in days (0: not at all).
    public let blockDays: Int
    let logger: Logger
    let now: UnixClock

    /// The export's and the erasure's page size.
    static let pageSize = 500
    /// How long a worker holds a job between two recorded steps (a step may scan a large collection once).
    static let lease: Duration = .seconds(600)

    init(
        database: MongoDatabase, devices: DeviceService, audit: AuditLog, blockDays: Int,
        logger: Logger, now: @escaping UnixClock
    ) {
        self.data = PersonDataDAO(database: database, now: now)
        self.erasures = ErasureDAO(database: database, now: now)
        self.groups = GroupDAO(database: database, now: now)
        self.devices = devices
        self.audit = audit
        self.blockDays = blockDays
        self.logger = logger
        self.now = now
    }

    // MARK: Export

    /// Writes everything the hub holds on `person` as one JSON object (the API's JSON: ids as hex, times in Unix ms), a member per kind of record
    /// (`PersonDataDAO.Kind`) holding an array, each array written a page at a time (`write` is called per page, so
    /// 100,000 receipts never sit in memory at once). Never a registration token, a secret's hash or a nonce.
    /// - Throws: `DAOError`; what `write` throws.
    public func export(_ person: String, write: (String) async throws -> Void) async throws {
        let devices = try await data.deviceIDs(of: person)
        var named = [try await pseudonyms.pseudonym(of: person)]
        for device in devices { named.append(try await pseudonyms.pseudonym(of: device.hex, kind: .device)) }
        let subject = PersonDataDAO.Subject(person: person, devices: devices, pseudonyms: named)
        let json = LegacyJSONWriter()
        let head: BSONDocument = ["person": .string(person), "exported_at": .int64(now())]
        try await write(String(String(decoding: json.bytes(head), as: UTF8.self).dropLast()))
        for kind in PersonDataDAO.Kind.allCases {
            try await write(", \"\(kind.rawValue)\": [")
            var after: BSONValue?
            var first = true
            while true {
                let page = try await data.page(kind, of: subject, after: after, limit: Self.pageSize)
                guard !page.isEmpty else { break }
                let text = page.map { String(decoding: json.bytes($0), as: UTF8.self) }.joined(separator: ", ")
                try await write((first ? "" : ", ") + text)
                first = false
                after = page.last?["_id"]
                if page.count < Self.pageSize { break }
            }
            try await write("]")
        }
        try await write("}\n")
    }

    // MARK: Erasure

    /// Starts erasing `person` (or answers the erasure under way); `posts` says whether their room posts are deleted
    /// or kept without their author. Recorded in the audit log as every entry naming a person is (their pseudonym,
    /// the id sealed with their key, which the erasure's last step deletes).
    /// - Throws: `DAOError`.
    public func erase(_ person: String, posts: Erasure.Posts) async throws -> Erasure {
        let pseudonym = try await pseudonyms.pseudonym(of: person)
        let job = try await erasures.start(person: person, pseudonym: pseudonym, posts: posts)
        await audit.record(
            action: "person.erase.request", target: AuditTarget(kind: "person", id: person),
            change: ["posts": .string(posts.rawValue)])
        return job
    }

    /// The erasure of `person`, running or done, if any.
    /// - Throws: `DAOError`.
    public func erasure(of person: String) async throws -> Erasure? {
        try await erasures.find(pseudonym: try await pseudonyms.pseudonym(of: person))
    }

    /// Which of `persons` were erased within `ERASURE_BLOCK_DAYS` (none when it is 0, without a read).
    /// - Throws: `DAOError`.
    public func blocked(_ persons: [String]) async throws -> Set<String> {
        guard blockDays > 0, !persons.isEmpty else { return [] }
        var byPseudonym: [String: String] = [:]
        for person in persons { byPseudonym[try await pseudonyms.pseudonym(of: person)] = person }
        let blocked = try await data.blocked(Array(byPseudonym.keys))
        return Set(blocked.compactMap { byPseudonym[$0] })
    }

    /// How long a job waits after its `failures`-th failure (Unix ms): 30 s, doubling, at most an hour. A job never
    /// gives up (an erasure is owed); `GET /person/:personID/erasure` shows its `failures` and `last_error`.
    static func retryDelay(afterFailures failures: Int) -> Int64 {
        min(30_000 << min(failures, 7), 3_600_000)
    }

    /// How many steps an erasure has.
    public static var stepCount: Int { steps.count }

    /// The steps of an erasure, in order: each removes or changes one kind of record and may run again. The person
    /// is blocked and their devices gone first (no new delivery, receipt or membership names them after), their
    /// records are deleted again at the end for what was written meanwhile, and the keys that open their id (and
    /// their devices') in the audit log go last.
    static let steps = [
        "devices read, person blocked", "devices", "deliveries and receipts", "groups", "settings", "messages",
        "events", "deliveries and receipts again", "audit keys", "end",
    ]

    /// Claims the erasure due (one at a time: a claim's lease covers the job it runs) and runs it to its end, or
    /// until its lease is lost; answers how many it ran.
    /// - Throws: `DAOError` when none could be claimed (a failing step hands its job back to be retried).
    @discardableResult
    public func runDueErasures(owner: String = "erasure/\(ObjectID().hex)") async throws -> Int {
        var ran = 0
        while let job = try await erasures.claim(owner: owner, leaseMS: Self.lease.milliseconds, limit: 1).first {
            ran += 1
            do {
                try await run(job)
            } catch {
                let code = (error as? DAOError).map { "\($0.code)" } ?? String(describing: type(of: error))
                let wait = Self.retryDelay(afterFailures: job.failures)
                // The step that failed is the one after the last recorded.
                let failed = (try? await erasures.find(pseudonym: job.pseudonym))?.step ?? job.step
                let name = Self.steps.indices.contains(failed) ? Self.steps[failed] : "\(failed)"
                logger.warning(
                    "an erasure step failed; it is retried",
                    metadata: ["error": "\(error)", "erasure.step": "\(name)", "retry_in_s": "\(wait / 1000)"])
                try? await erasures.retry(job, at: now() + wait, error: code)
            }
        }
        return ran
    }

    /// Runs the erasures due, every few seconds, until cancelled.
    public func erasureLoop(poll: Duration = .seconds(5)) async {
        while !Task.isCancelled {
            let ran = (try? await runDueErasures()) ?? 0
            if ran == 0 { try? await Task.sleep(for: poll) }
        }
    }

    /// Runs `job` from its recorded step to its end, recording each step as it is done (which moves its lease on).
    private func run(_ job: Erasure) async throws {
        guard let person = job.person else { return }
        var devices = job.devices
        var counts = job.counts
        func add(_ more: [String: Int64]) { for (name, count) in more { counts[name, default: 0] += count } }
        var step = job.step
        while step < Self.steps.count - 1 {
            switch step {
            case 0:
                devices = Array(Set(devices + (try await data.deviceIDs(of: person))))
                if blockDays > 0 {
                    try await data.block(job.pseudonym, until: now() + Int64(blockDays) * 86_400_000)
                }
            case 1:
                // Those still the person's (a tablet handed on meanwhile is another person's now), and any bound
                // since the job began.
                // A device no longer found was deleted (by this step before a crash, or otherwise) and stays listed.
                let ids = Array(Set(devices + (try await data.deviceIDs(of: person))))
                let found = try await self.devices.devices(ids: ids)
                let others = Set(found.filter { $0.person != person }.map(\.id))
                var deleted: Int64 = 0
                for device in found where device.person == person {
                    try await self.devices.delete(device)
                    deleted += 1
                }
                devices = ids.filter { !others.contains($0) }
                add(["devices": deleted])
            case 2, 7: add(try await data.eraseRecords(of: person, devices: devices))
            case 3:
                var removed: Int64 = 0
                while true {
                    let memberships = try await groups.groups(of: person, limit: 1_000)
                    for group in memberships where try await groups.remove(person, from: group) { removed += 1 }
                    if memberships.count < 1_000 { break }
                }
                add(["group_members": removed, "groups": try await data.eraseFromGroupLists(person)])
            case 4: add(try await data.eraseSettings(of: person))
            case 5: add(try await data.eraseFromMessages(person, deletingPosts: job.posts == .delete))
            case 6: add(["events": try await data.eraseFromEvents(person)])
            case 8:
                var named = [job.pseudonym]
                for device in devices { named.append(try await pseudonyms.pseudonym(of: device.hex, kind: .device)) }
                add([CollectionName.auditKeys: try await audit.subjects.forget(named)])
            default: break
            }
            step += 1
            guard
                try await erasures.advance(
                    job, to: step, devices: devices, counts: counts, leaseMS: Self.lease.milliseconds)
            else { return }  // another worker holds it now
        }
        guard try await erasures.finish(job, counts: counts) else { return }
        await audit.record(
            actor: .system, action: "person.erase", target: .pseudonymous(.person, job.pseudonym),
            change: [
                "posts": .string(job.posts.rawValue),
                "removed": .int64(counts.values.reduce(0, +)),
            ])
    }
}
