import Foundation
internal import GRDB

/// The messages the app has received, kept in its SQLite file (the design's Database and Message modules).
///
/// Adding is idempotent by `msiKey`, so a message that arrives twice (an Alert's two FCM components, a push and
/// a catch-up) is stored once. Every method is safe to call from any task.
public final class MessageStore: Sendable {
    let database: LocalDatabase
    private let clock: @Sendable () -> Date
    private let timeZone: TimeZone

    /// Opens the store in the SQLite file at `path` (created if missing), or in memory when `path` is nil.
    ///
    /// `clock` and `timeZone` decide what "today" is for `clearOldMessages()`.
    /// - Throws: `MSIKitError` `.database` when the file cannot be opened or migrated.
    public init(
        path: String?, clock: @escaping @Sendable () -> Date = { Date() }, timeZone: TimeZone = .current
    ) throws(MSIKitError) {
        self.database = try LocalDatabase(path: path)
        self.clock = clock
        self.timeZone = timeZone
    }

    /// Stores `message` unless one with its `msiKey` is already stored; returns whether it was new (addMessage).
    /// - Throws: `MSIKitError` `.database`.
    @discardableResult
    public func add(_ message: Message) async throws(MSIKitError) -> Bool {
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO Message (msi_key, topic_key, dist, title, "desc", message, timestamp, data, audience,
                    group_id, urgency, ack, ack_responses, lang, translations, image, kind, dismissible, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(msi_key) DO NOTHING
                    """,
                arguments: [
                    message.msiKey, message.topicKey, message.distribution.rawValue, message.title, message.desc,
                    message.text, message.timestamp, Self.json(message.data), message.audience?.rawValue,
                    message.groupID, message.urgency.rawValue, message.acknowledgementRequested,
                    Self.json(message.acknowledgementResponses), message.language, Self.json(message.translations),
                    message.image?.absoluteString, message.kind == Banner.generalKind ? nil : message.kind,
                    message.dismissible,
                    message.expiresAt.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) },
                ])
            return db.changesCount == 1
        }
    }

    /// Every stored message, newest first (getMessages).
    /// - Throws: `MSIKitError` `.database`.
    public func messages() async throws(MSIKitError) -> [Message] {
        try await database.read { db in
            try Row.fetchAll(db, sql: "\(Self.select) ORDER BY timestamp DESC, ID DESC").map(Message.init(row:))
        }
    }

    /// The stored messages of one channel (topic keys that start with its id and "-"), newest first.
    /// - Throws: `MSIKitError` `.database`.
    public func messages(channelID: String) async throws(MSIKitError) -> [Message] {
        let prefix = channelID.lowercased() + "-"
        return try await database.read { db in
            // substr rather than LIKE: an exact, case-sensitive prefix, whatever the id contains.
            try Row.fetchAll(
                db,
                sql: "\(Self.select) WHERE substr(topic_key, 1, ?) = ? ORDER BY timestamp DESC, ID DESC",
                arguments: [prefix.count, prefix]
            ).map(Message.init(row:))
        }
    }

    /// The stored messages that reached this device through group `groupID` (a class, a chat room), newest first.
    /// - Throws: `MSIKitError` `.database`.
    public func messages(groupID: String) async throws(MSIKitError) -> [Message] {
        try await database.read { db in
            try Row.fetchAll(
                db, sql: "\(Self.select) WHERE group_id = ? ORDER BY timestamp DESC, ID DESC", arguments: [groupID]
            ).map(Message.init(row:))
        }
    }

    /// Whether a message with this `msiKey` is stored (exists).
    /// - Throws: `MSIKitError` `.database`.
    public func exists(msiKey: String) async throws(MSIKitError) -> Bool {
        try await database.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM Message WHERE msi_key = ?)", arguments: [msiKey])
                ?? false
        }
    }

    /// The stored message with this `msiKey`, or nil.
    /// - Throws: `MSIKitError` `.database`.
    public func message(msiKey: String) async throws(MSIKitError) -> Message? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "\(Self.select) WHERE msi_key = ?", arguments: [msiKey]).map(Message.init(row:))
        }
    }

    /// Replaces the texts (title, desc, text, language and translations) of the stored message with `corrected`'s
    /// and marks it `corrected`; returns whether it was stored.
    /// - Throws: `MSIKitError` `.database`.
    @discardableResult
    public func correct(_ corrected: Message) async throws(MSIKitError) -> Bool {
        try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE Message SET title = ?, "desc" = ?, message = ?, lang = ?, translations = ?, corrected = 1
                    WHERE msi_key = ?
                    """,
                arguments: [
                    corrected.title, corrected.desc, corrected.text, corrected.language,
                    Self.json(corrected.translations), corrected.msiKey,
                ])
            return db.changesCount > 0
        }
    }

    /// Marks the message with this `msiKey` acknowledged by its person; returns whether it is stored.
    /// - Throws: `MSIKitError` `.database`.
    @discardableResult
    public func markAcknowledged(msiKey: String) async throws(MSIKitError) -> Bool {
        try await database.write { db in
            try db.execute(sql: "UPDATE Message SET acknowledged = 1 WHERE msi_key = ?", arguments: [msiKey])
            return db.changesCount > 0
        }
    }

    /// Deletes the message with this `msiKey`; returns whether there was one (removeMessage).
    /// - Throws: `MSIKitError` `.database`.
    @discardableResult
    public func remove(msiKey: String) async throws(MSIKitError) -> Bool {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM Message WHERE msi_key = ?", arguments: [msiKey])
            return db.changesCount > 0
        }
    }

    /// Deletes the messages older than a week from the end of the current day; returns how many (clearOldMessages).
    ///
    /// The end of the current day is the next midnight in the store's time zone; the cut is seven calendar days
    /// before it, so the messages of today and the six days before are kept and a message from the seventh day
    /// back is deleted even if it is less than 168 hours old. Calendar days, not 168 hours: a daylight-saving
    /// change within the week does not move the cut away from midnight.
    /// - Throws: `MSIKitError` `.database`.
    @discardableResult
    public func clearOldMessages() async throws(MSIKitError) -> Int {
        let cut = Self.milliseconds(oldMessagesCutoff)
        return try await database.write { db in
            try db.execute(sql: "DELETE FROM Message WHERE timestamp < ?", arguments: [cut])
            return db.changesCount
        }
    }

    /// The instant before which `clearOldMessages()` deletes: midnight at the start of the sixth day before today.
    public var oldMessagesCutoff: Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let startOfToday = calendar.startOfDay(for: clock())
        let endOfToday = calendar.date(byAdding: .day, value: 1, to: startOfToday) ?? startOfToday + 86_400
        return calendar.date(byAdding: .day, value: -7, to: endOfToday) ?? endOfToday - 7 * 86_400
    }

    /// The newest stored message's timestamp (Unix milliseconds), or nil when none is stored.
    /// - Throws: `MSIKitError` `.database`.
    public func newestTimestamp() async throws(MSIKitError) -> Int64? {
        try await database.read { db in
            try Int64.fetchOne(db, sql: "SELECT MAX(timestamp) FROM Message")
        }
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    private static let select =
        #"SELECT msi_key, topic_key, dist, title, "desc", message, timestamp, data, audience, group_id, urgency, ack, "#
        + #"ack_responses, lang, translations, image, kind, dismissible, expires_at, corrected, acknowledged FROM Message"#

    /// A message's data as stored: a JSON object of strings with sorted keys, or NULL when it is empty.
    static func json(_ data: [String: String]) -> String? {
        guard !data.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(data)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Responses as stored: a JSON array of strings, or NULL when there are none.
    static func json(_ responses: [String]) -> String? {
        guard !responses.isEmpty else { return nil }
        return (try? JSONEncoder().encode(responses)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Translations as stored: a JSON object of language codes to texts with sorted keys, or NULL when there are none.
    static func json(_ translations: [String: MessageText]) -> String? {
        guard !translations.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(translations)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A stored translations column read back; empty for NULL or text that is not such an object.
    static func translations(json: String?) -> [String: MessageText] {
        guard let json else { return [:] }
        return (try? JSONDecoder().decode([String: MessageText].self, from: Data(json.utf8))) ?? [:]
    }

    /// A stored responses column read back; empty for NULL or text that is not a JSON array of strings.
    static func responses(json: String?) -> [String] {
        guard let json else { return [] }
        return (try? JSONDecoder().decode([String].self, from: Data(json.utf8))) ?? []
    }

    /// A stored data column read back; empty for NULL or text that is not a JSON object of strings.
    static func data(json: String?) -> [String: String] {
        guard let json else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))) ?? [:]
    }
}

extension Message {
    /// Reads a row of the `Message` table; a NULL the legacy app may have left reads as "" (or 0).
    fileprivate init(row: Row) {
        self.init(
            msiKey: row["msi_key"] ?? "",
            topicKey: row["topic_key"] ?? "",
            distribution: Distribution(rawValue: row["dist"] ?? ""),
            title: row["title"] ?? "",
            desc: row["desc"] ?? "",
            text: row["message"] ?? "",
            timestamp: row["timestamp"] ?? 0,
            data: MessageStore.data(json: row["data"]),
            audience: (row["audience"] as String?).map(Audience.init(rawValue:)),
            groupID: row["group_id"],
            urgency: (row["urgency"] as String?).map(Urgency.init(rawValue:)) ?? .active,
            acknowledgementRequested: row["ack"] ?? false,
            acknowledgementResponses: MessageStore.responses(json: row["ack_responses"]),
            language: row["lang"],
            translations: MessageStore.translations(json: row["translations"]),
            image: (row["image"] as String?).flatMap(URL.init(string:)),
            kind: row["kind"] ?? Banner.generalKind,
            dismissible: row["dismissible"] ?? true,
            expiresAt: (row["expires_at"] as Int64?).map { Date(timeIntervalSince1970: Double($0) / 1000) }
        )
        self.corrected = row["corrected"] ?? false
        self.acknowledged = row["acknowledged"] ?? false
    }
}
