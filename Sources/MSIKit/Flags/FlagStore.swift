import Foundation
internal import GRDB

/// A feature flag set by a message that is not shown (`"display": false`): one key of its `data`.
public struct FeatureFlag: Sendable, Hashable {
    /// The key in the message's data ("new_quiz").
    public var name: String
    /// Its value ("on", "variant-b").
    public var value: String
    /// When the flag drops out: the message's expiry; nil when the message had none.
    public var expiresAt: Date?
    /// The message that set it.
    public var msiKey: String
    /// When the hub created that message (Unix ms): a flag keeps the value of the newest message that set it.
    public var setAt: Int64

    /// Creates a flag.
    public init(name: String, value: String, expiresAt: Date?, msiKey: String, setAt: Int64) {
        self.name = name
        self.value = value
        self.expiresAt = expiresAt
        self.msiKey = msiKey
        self.setAt = setAt
    }
}

/// A flag that changed: its value before and after (nil: not set, or expired).
public struct FlagChange: Sendable, Hashable {
    public var name: String
    public var oldValue: String?
    public var newValue: String?

    /// Creates a change.
    public init(name: String, oldValue: String?, newValue: String?) {
        self.name = name
        self.oldValue = oldValue
        self.newValue = newValue
    }
}

/// The feature flags that messages not shown (`"display": false`, for a group of users or an A/B cohort) set: each
/// key of such a message's `data` becomes a flag with the message's expiry, kept in the library's SQLite file with
/// the rest of its state. A flag keeps the value of the newest message (by the hub's timestamp) that set it, so a
/// late push of an older message changes nothing; an expired flag drops out. The library applies every such message
/// that arrives, by push or catch-up, once; they never enter the message list.
///
/// ```swift
/// client.flags.onChange { changes in reloadFeatures(changes.map(\.name)) }
/// if try await client.flags.value(of: "new_quiz") == "on" { showNewQuiz() }
/// ```
public final class FlagStore: Sendable {
    let database: LocalDatabase
    private let clock: @Sendable () -> Date
    private let observer = FlagObserver()

    init(database: LocalDatabase, clock: @escaping @Sendable () -> Date) {
        self.database = database
        self.clock = clock
    }

    /// Every flag that has not expired, by name; expired ones are removed (and reported to `onChange`).
    /// - Throws: `MSIKitError` `.database`.
    public func all() async throws(MSIKitError) -> [FeatureFlag] {
        try await dropExpired()
        let now = MessageStore.milliseconds(clock())
        return try await database.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT name, value, expires_at, msi_key, set_at FROM msikit_flag "
                    + "WHERE expires_at IS NULL OR expires_at > ? ORDER BY name",
                arguments: [now]
            ).map(FeatureFlag.init(row:))
        }
    }

    /// The value of flag `name`, or nil when no live message set it.
    /// - Throws: `MSIKitError` `.database`.
    public func value(of name: String) async throws(MSIKitError) -> String? {
        try await all().first { $0.name == name }?.value
    }

    /// Calls `handler` with the flags that changed each time a message changes some or some expire (it replaces
    /// the handler given before). It runs on the task that applied the message: keep it short.
    public func onChange(_ handler: @escaping @Sendable ([FlagChange]) -> Void) {
        observer.set(handler)
    }

    /// Applies a non-display message once: each key of its data set to its value with its expiry, unless a newer
    /// message set that flag; nothing when it has expired already. Returns whether the message was new.
    /// - Throws: `MSIKitError` `.database`.
    @discardableResult
    func apply(_ message: BackgroundMessage) async throws(MSIKitError) -> Bool {
        let now = MessageStore.milliseconds(clock())
        let (new, changes) = try await database.write { db -> (Bool, [FlagChange]) in
            try db.execute(
                sql: "INSERT INTO msikit_background (msi_key, timestamp) VALUES (?, ?) ON CONFLICT DO NOTHING",
                arguments: [message.msiKey, message.timestamp])
            guard db.changesCount == 1 else { return (false, []) }
            if let expiresAt = message.expiresAt, expiresAt <= now { return (true, []) }
            var changes: [FlagChange] = []
            for (name, value) in message.data.sorted(by: { $0.key < $1.key }) {
                let current = try Row.fetchOne(
                    db, sql: "SELECT value, expires_at, set_at FROM msikit_flag WHERE name = ?", arguments: [name])
                let currentLive = current.flatMap { row -> String? in
                    let expiry: Int64? = row["expires_at"]
                    return expiry.map { $0 > now } ?? true ? row["value"] : nil
                }
                // A newer message's live value stands.
                if let current, currentLive != nil, (current["set_at"] as Int64? ?? 0) > message.timestamp { continue }
                try db.execute(
                    sql: """
                        INSERT INTO msikit_flag (name, value, expires_at, msi_key, set_at) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT(name) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at,
                        msi_key = excluded.msi_key, set_at = excluded.set_at
                        """,
                    arguments: [name, value, message.expiresAt, message.msiKey, message.timestamp])
                if currentLive != value {
                    changes.append(FlagChange(name: name, oldValue: currentLive, newValue: value))
                }
            }
            return (true, changes)
        }
        observer.notify(changes)
        return new
    }

    /// Removes the expired flags and reports them.
    func dropExpired() async throws(MSIKitError) {
        let now = MessageStore.milliseconds(clock())
        let changes = try await database.write { db -> [FlagChange] in
            let expired = try Row.fetchAll(
                db, sql: "SELECT name, value FROM msikit_flag WHERE expires_at IS NOT NULL AND expires_at <= ?",
                arguments: [now])
            guard !expired.isEmpty else { return [] }
            try db.execute(
                sql: "DELETE FROM msikit_flag WHERE expires_at IS NOT NULL AND expires_at <= ?", arguments: [now])
            return expired.map { FlagChange(name: $0["name"], oldValue: $0["value"], newValue: nil) }
        }
        observer.notify(changes)
    }

    /// Forgets the non-display messages applied before `cut` (Unix ms): a catch-up never goes back that far.
    func forgetApplied(before cut: Int64) async throws(MSIKitError) {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM msikit_background WHERE timestamp < ?", arguments: [cut])
        }
    }

    /// The newest applied non-display message's timestamp (Unix ms), or nil.
    func newestApplied() async throws(MSIKitError) -> Int64? {
        try await database.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(timestamp) FROM msikit_background") }
    }
}

/// The change handler, set from any thread.
// @unchecked: `handler` is read and written only under `lock` (Mutex needs iOS 18).
private final class FlagObserver: @unchecked Sendable {
    private let lock = NSLock()
    private var handler: (@Sendable ([FlagChange]) -> Void)?

    func set(_ handler: @escaping @Sendable ([FlagChange]) -> Void) {
        lock.withLock { self.handler = handler }
    }

    func notify(_ changes: [FlagChange]) {
        guard !changes.isEmpty, let handler = lock.withLock({ self.handler }) else { return }
        handler(changes)
    }
}

/// A message not shown, as the flags take it: its key, time, data and expiry (Unix ms).
struct BackgroundMessage: Sendable, Hashable {
    var msiKey: String
    var timestamp: Int64
    var data: [String: String]
    var expiresAt: Int64?
}

extension FeatureFlag {
    /// Reads a row of `msikit_flag`.
    fileprivate init(row: Row) {
        let expiry: Int64? = row["expires_at"]
        self.init(
            name: row["name"], value: row["value"],
            expiresAt: expiry.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            msiKey: row["msi_key"], setAt: row["set_at"])
    }
}
