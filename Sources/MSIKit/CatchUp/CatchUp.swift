import Foundation

/// Fetches what the device missed while it was not listening (`GET /device/:id/messages`), page by page.
struct CatchUp: Sendable {
    let store: MessageStore
    let hub: HubConnection
    let registration: DeviceRegistration
    /// Where a `received` receipt of each new message is queued; nil: none is.
    var receipts: ReceiptQueue?
    /// Where the data of messages not shown goes (`Listener.flags`).
    var flags: FlagStore?
    /// The device's locale, whose language a translated message is stored in.
    var locale: String?
    /// The page size asked for: the hub's maximum.
    static let pageSize = 200

    /// Stores every message since the newest one stored or applied to the flags (or since the clear-old cut,
    /// whichever is later: older messages would be cleared at once) and returns the new ones, oldest first.
    func run() async throws(MSIKitError) -> [ReceivedMessage] {
        let newest = max(try await store.newestTimestamp() ?? 0, try await flags?.newestApplied() ?? 0)
        // `since` is inclusive: the newest stored message comes back and is recognised by its key.
        let since = max(newest, MessageStore.milliseconds(store.oldMessagesCutoff))
        let listener = Listener(store: store, hub: hub, receipts: receipts, flags: flags, locale: locale)
        var received: [ReceivedMessage] = []
        var cursor: String?
        repeat {
            var query = [
                URLQueryItem(name: "since", value: String(since)), .init(name: "limit", value: String(Self.pageSize)),
            ]
            if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
            let page: Page = try await registration.authorized { [hub, query] (id, secret) throws(MSIKitError) in
                try await hub.json(
                    "GET", ["device", id, "messages"], query: query, headers: HubConnection.bearer(secret))
            }
            for message in page.messages {
                if let new = try await listener.take(message) { received.append(new) }
            }
            // A hub that hands back the cursor it was given would keep this loop going for ever.
            cursor = page.nextCursor == cursor ? nil : page.nextCursor
        } while cursor != nil
        return received
    }

    private struct Page: Decodable, Sendable {
        var messages: [HubMessage]
        var nextCursor: String?

        enum CodingKeys: String, CodingKey {
            case messages, nextCursor = "next_cursor"
        }
    }
}
