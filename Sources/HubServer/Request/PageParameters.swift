import DAO
import Hummingbird
import HummingbirdCore
import Mongo

/// The paging parameters the message lists share (`GET /message`, `GET /device/:deviceID/messages`):
/// `since` (Unix ms, inclusive), `limit` (1 to 200) and `cursor` (a previous page's `next_cursor`).
struct PageParameters {
    /// The most messages one page holds.
    static let maximumLimit = 200

    var since: Int64?
    var limit: Int
    var after: MessageCursor?

    /// Reads the parameters, `limit` defaulting to `defaultLimit`.
    /// - Throws: `HubError` 400 `invalid_query` naming the parameter.
    init(_ query: FlatDictionary<Substring, Substring>, defaultLimit: Int = 50) throws {
        if let since = query.get("since") {
            guard let value = Int64(since), value >= 0 else {
                throw HubError.badRequest(.invalidQuery, "since must be a Unix time in milliseconds")
            }
            self.since = value
        }
        limit = try PageQuery.limit(query, default: defaultLimit, maximum: Self.maximumLimit)
        after = try PageQuery.cursor(query) { MessageCursor(token: $0) }
    }

    /// `{"messages": [...], "next_cursor": String|null}`.
    static func response(_ page: MessagePage) -> Response {
        JSONResponse.make([
            "messages": .array(page.messages.map { .document($0.document) }),
            "next_cursor": page.next.map { .string($0.token) } ?? .null,
        ])
    }
}
