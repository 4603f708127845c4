// The audit log's API, for every service that records an action (HubCore is the one place that records):
//
//     try? await audit.record(action: "message.approve", target: AuditTarget(kind: "message", id: msiKey.hex),
//                             change: AuditChange.edit(before: ["state": "awaiting_approval"], after: ["state": "sent"]))
//
// - `AuditLog.record(actor:action:target:change:) async` never throws: call it right AFTER the change succeeded;
//   it retries the append (a duplicate `seq` from another replica, an unreachable database) and, when it finally
//   fails, logs an error holding the whole (redacted) entry, so the action is never lost silently.
// - `actor` defaults to `AuditActor.current`: the caller the HTTP layer put in the task (a user, a token, a device),
//   `AuditActor.system` otherwise. Pass `AuditActor(identity)` when a service has an `Identity` at hand.
// - `change` is redacted here (`AuditRedaction`): secrets, password hashes, tokens and registrations never enter
//   the log. Use `AuditChange.edit(before:after:)` for edits, `AuditChange.created(_:)` for new things.
// - `HubServices.audit` is the shared instance; the services get it in their `init`.
import DAO
import Crypto
import HubTime
import Logging
import Mongo

/// The tamper-evident audit log: appends hash-chained entries to `audit` (one chain whatever the number of replicas),
/// verifies the chain, exports it and pages through it for the portal.
///
/// Appending chains the entries waiting in this process (`AuditAppendGate`) after the head (highest `seq`): each with
/// `seq` = the one before + 1 and `prev` = its hash, hashed (SHA-256 over `AuditCanonicalEncoding`), inserted in order
/// in one command; the unique index on `seq` lets only one of two concurrent appends of the same place succeed, and
/// the other keeps what landed and chains the rest after the new head, after a random pause.
public struct AuditLog: Sendable {
    let entries: AuditDAO
    let logger: Logger
    let now: UnixClock
    /// This process's appends, written in batches one at a time.
    let gate: AuditAppendGate
    /// Counts the throttled logins recorded per address and minute, across replicas (`recordThrottledLogin`).
    let rates: RateWindowDAO
    /// Names persons, users and devices by pseudonym in what is appended, and back in what is read.
    public let subjects: AuditSubjectKeys

    /// How long an append keeps starting again (lost races, an unreachable database) before it is logged as lost: a
    /// replica that keeps losing to a busy one (which knows the head without reading it) gets its turn well within.
    public static let appendPatience: Duration = .seconds(30)
    /// How many entries `verify` and `export` read at a time.
    public static let pageSize = 500
    /// The most entries one page of `entries(_:before:limit:)` lists.
    public static let maximumPage = 200

    /// The log of `database`; `gate` is the process's for that database unless a test stands in for another process;
    /// `pseudonymKey` is `AUDIT_PSEUDONYM_KEY` (nil: the key the hub made once and keeps in the database).
    public init(
        database: MongoDatabase, logger: Logger = Logger(label: "msi-hub.audit"),
        now: @escaping UnixClock = UnixTime.nowMilliseconds, gate: AuditAppendGate? = nil, pseudonymKey: String? = nil
    ) {
        self.entries = AuditDAO(database: database)
        self.logger = logger
        self.now = now
        self.gate = gate ?? AuditAppendGate.shared(for: database)
        self.rates = RateWindowDAO(database: database, now: now)
        self.subjects = AuditSubjectKeys(
            pseudonyms: AuditPseudonyms(key: pseudonymKey, database: database), database: database)
    }

    /// Records that `actor` did `action` to `target`, with the (redacted) `change`; never throws (see the file's top).
    public func record(
        actor: AuditActor = AuditActor.current, action: String, target: AuditTarget,
        change: BSONDocument? = nil
    ) async {
        do {
            _ = try await append(actor: actor, action: action, target: target, change: change)
        } catch {
            var metadata: Logger.Metadata = [
                "audit.actor": "\(actor.kind.rawValue):\(actor.name)", "audit.action": "\(action)",
                "audit.target": "\(target.kind):\(target.id)", "error": "\(error)",
            ]
            if let change { metadata["audit.change"] = "\(AuditRedaction.redact(change).extendedJSON(.relaxed))" }
            logger.error("audit entry not recorded", metadata: metadata)
        }
    }

    /// An entry to append, redacted, before its place in the chain is known; `at` is when it was recorded.
    struct Draft: Sendable {
        var at: Int64
        var actor: AuditActor
        var action: String
        var target: AuditTarget
        var change: BSONDocument?
        /// The persons, users and devices it names by pseudonym (filled by `AuditSubjectKeys`).
        var subjects: [AuditSubject] = []
    }

    /// Appends an entry and answers it as stored.
    /// - Throws: `DAOError` when every attempt failed.
    @discardableResult
    public func append(actor: AuditActor, action: String, target: AuditTarget, change: BSONDocument?) async throws
        -> AuditEntry
    {
        let draft = Draft(
            at: now(), actor: actor, action: action, target: target,
            change: change.map(AuditRedaction.redact))
        return try await gate.append(try await subjects.pseudonymize(draft))
    }

    /// The hex SHA-256 of `entry`'s canonical encoding.
    public static func hash(of entry: AuditEntry) -> String {
        Hex.encode(SHA256.hash(data: entry.canonicalBytes))
    }

    /// The newest entry, or nil when the log is empty.
    /// - Throws: `DAOError`.
    public func head() async throws -> AuditEntry? {
        try await entries.head()
    }

    /// Walks the chain in `seq` order and answers the first entry that breaks it, or the head when none does.
    /// - Throws: `DAOError`.
    public func verify() async throws -> AuditVerification {
        var previous: (seq: Int64, hash: String) = (0, AuditEntry.genesis)
        while true {
            let page = try await entries.page(after: previous.seq, limit: Self.pageSize)
            for entry in page {
                if entry.seq != previous.seq + 1 {
                    return .broken(seq: previous.seq + 1, reason: .deleted)
                }
                if entry.hash != Self.hash(of: entry) { return .broken(seq: entry.seq, reason: .edited) }
                if entry.prev != previous.hash { return .broken(seq: entry.seq, reason: .brokenLink) }
                previous = (entry.seq, entry.hash)
            }
            if page.count < Self.pageSize { return .intact(headSeq: previous.seq, headHash: previous.hash) }
        }
    }

    /// Writes every entry recorded at or after `since` (Unix ms), in `seq` order, as one line of relaxed Extended
    /// JSON each (without `_id`); answers how many.
    /// - Throws: `DAOError`, and what `write` throws.
    public func export(since: Int64, write: (String) throws -> Void) async throws -> Int {
        var after = try await entries.seqBefore(at: since)
        var count = 0
        guard after < Int64.max else { return 0 }
        while true {
            let page = try await entries.page(after: after, limit: Self.pageSize)
            for entry in page {
                try write(Self.line(entry))
                after = entry.seq
                count += 1
            }
            if page.count < Self.pageSize { return count }
        }
    }

    /// One entry as a line of JSON (the stored fields but `_id`).
    public static func line(_ entry: AuditEntry) -> String {
        BSONDocument(entry.stored.elements.filter { $0.key != "_id" }).extendedJSON(.relaxed)
    }

    /// Up to `limit` entries matching `filter`, newest first, below `before` (a `seq`) when given, as a reader sees
    /// them (clear names while their keys exist, "erased person" after: `AuditSubjectKeys.reveal`); `next` is the
    /// `before` of the page after (nil on the last). The actor and target are found by name or by pseudonym.
    /// - Throws: `DAOError`.
    public func entries(_ filter: AuditFilter, before: Int64?, limit: Int) async throws
        -> (entries: [AuditEntry], next: Int64?)
    {
        let limit = min(max(limit, 1), Self.maximumPage)
        var filter = filter
        if let actor = filter.actor {
            filter.actorPseudonyms = try await subjects.pseudonyms(of: actor, as: [.user, .device])
        }
        if let target = filter.target {
            filter.targetPseudonyms = try await subjects.pseudonyms(of: target, as: AuditSubject.Kind.allCases)
            filter.targetPersonPseudonym = try await subjects.pseudonyms.pseudonym(of: target)
        }
        let page = try await entries.list(filter, before: before, limit: limit + 1)
        let shown = try await subjects.reveal(Array(page.prefix(limit)))
        return (shown, page.count > limit ? shown.last?.seq : nil)
    }
}

/// What `AuditLog.verify` found.
public enum AuditVerification: Sendable, Equatable {
    /// Every entry's hash and link hold; the head's `seq` and hash (0 and `AuditEntry.genesis` for an empty log).
    case intact(headSeq: Int64, headHash: String)
    /// The first entry that breaks the chain, and how.
    case broken(seq: Int64, reason: AuditBreak)
}

/// How an entry breaks the chain.
public enum AuditBreak: String, Sendable, Equatable {
    /// Its hash is not the hash of its fields: it was edited.
    case edited
    /// No entry has this `seq` though later ones exist: it was deleted.
    case deleted
    /// Its `prev` is not the hash of the entry before: the one before was replaced whole (or this one).
    case brokenLink = "broken_link"

    /// A sentence for a person.
    public var explanation: String {
        switch self {
        case .edited: "its hash does not match its fields (edited)"
        case .deleted: "it is missing while later entries exist (deleted)"
        case .brokenLink: "its prev is not the hash of the entry before it (broken link)"
        }
    }
}
