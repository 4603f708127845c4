import Foundation
internal import GRDB

/// The receipts the device owes the hub, kept in the library's SQLite file (`msikit_receipt`) until the hub has
/// answered them: a receipt made offline is sent when the hub can be reached again, after a restart too.
///
/// One row per (message, event): a second `acknowledged` of a message not sent yet replaces the queued answer (the
/// hub keeps a person's first answer, or their latest where the message lets them change it: `changeable`).
struct ReceiptQueue: Sendable {
    let database: LocalDatabase
    /// The clock that stamps receipts (`at`, Unix ms).
    let clock: @Sendable () -> Date

    /// The most receipts one request carries (the hub's limit).
    static let batchSize = 500
    /// The longest response the hub takes, in bytes of UTF-8.
    static let maximumResponseBytes = 200

    /// Queues `event` of the message `msiKey`, stamped now; a receipt already queued for it is kept as it is, but an
    /// acknowledgement with another response, which replaces the queued one's.
    /// - Throws: `.invalidArgument` for a response longer than 200 bytes of UTF-8 or with another event than
    ///   `acknowledged`; `.database`.
    func enqueue(_ msiKey: String, _ event: ReceiptEvent, response: String? = nil) async throws(MSIKitError) {
        try await enqueue([msiKey], event, response: response)
    }

    /// Queues `event` of each of `msiKeys`, in one transaction.
    /// - Throws: as `enqueue(_:_:response:)`.
    func enqueue(_ msiKeys: [String], _ event: ReceiptEvent, response: String? = nil) async throws(MSIKitError) {
        guard !msiKeys.isEmpty else { return }
        if let response {
            guard event == .acknowledged else {
                throw MSIKitError(.invalidArgument, "Only an acknowledgement carries a response.")
            }
            guard response.utf8.count <= Self.maximumResponseBytes else {
                throw MSIKitError(
                    .invalidArgument,
                    "A response has at most \(Self.maximumResponseBytes) bytes of UTF-8.")
            }
        }
        let at = Int64((clock().timeIntervalSince1970 * 1000).rounded())
        try await database.write { db in
            for key in msiKeys {
                try db.execute(
                    sql: """
                        INSERT INTO msikit_receipt (msi_key, event, response, at) VALUES (?, ?, ?, ?)
                        ON CONFLICT(msi_key, event) DO UPDATE SET response = excluded.response, at = excluded.at
                        WHERE msikit_receipt.event = 'acknowledged'
                            AND msikit_receipt.response IS NOT excluded.response
                        """, arguments: [key, event.rawValue, response, at])
            }
        }
    }

    /// How many receipts wait to be sent.
    /// - Throws: `.database`.
    func count() async throws(MSIKitError) -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM msikit_receipt") ?? 0 }
    }

    /// Sends every queued receipt (`POST /device/:id/receipts`, `batchSize` a request) and forgets those the hub
    /// answered, stored, already known or refused alike (a refused one would be refused again); returns how many
    /// were sent. A failure leaves the rest queued for the next call.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals, `.database`.
    @discardableResult
    func send(hub: HubConnection, registration: DeviceRegistration) async throws(MSIKitError) -> Int {
        var sent = 0
        while true {
            let batch = try await database.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT rowid, msi_key, event, response, at FROM msikit_receipt ORDER BY rowid LIMIT ?",
                    arguments: [Self.batchSize]
                ).map { row in
                    (
                        rowid: row["rowid"] as Int64,
                        entry: Entry(
                            msiKey: row["msi_key"], event: row["event"],
                            response: row["response"], at: row["at"])
                    )
                }
            }
            guard !batch.isEmpty else { return sent }
            let body = batch.map(\.entry)
            do {
                let _: Answer = try await registration.authorized { [hub] (id, secret) throws(MSIKitError) in
                    try await hub.json(
                        "POST", ["device", id, "receipts"], headers: HubConnection.bearer(secret), body: body)
                }
            } catch  where error.code.hubStatus == 422 {
                // A batch the hub cannot read would block the queue for ever: it is dropped.
            }
            let rowids = batch.map(\.rowid)
            try await database.write { db in
                try db.execute(
                    sql:
                        "DELETE FROM msikit_receipt WHERE rowid IN (\(rowids.map { _ in "?" }.joined(separator: ",")))",
                    arguments: StatementArguments(rowids))
            }
            sent += batch.count
            if batch.count < Self.batchSize { return sent }
        }
    }

    /// One receipt as the hub takes it.
    struct Entry: Codable, Sendable {
        var msiKey: String
        var event: String
        var response: String?
        var at: Int64

        enum CodingKeys: String, CodingKey {
            case msiKey = "msi_key", event, response, at
        }
    }

    /// The hub's answer: one result per receipt (read only to know it answered).
    private struct Answer: Decodable, Sendable {
        var results: [Result]

        struct Result: Decodable, Sendable {
            var index: Int
            var status: String
            var code: String?
        }
    }
}
