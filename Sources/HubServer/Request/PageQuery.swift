import Hummingbird
import HummingbirdCore

/// The `limit` and `cursor` query parameters of a paged listing, read the same way by every route that pages: a
/// limit out of its range, or a cursor this server did not give, is 400 `invalid_query` before any query.
enum PageQuery {
    /// The query's `limit`: 1 to `maximum`, `defaultLimit` when absent.
    /// - Throws: `HubError` 400 `invalid_query`.
    static func limit(_ query: FlatDictionary<Substring, Substring>, default defaultLimit: Int, maximum: Int) throws
        -> Int
    {
        guard let text = query.get("limit") else { return defaultLimit }
        guard let limit = Int(text), (1...maximum).contains(limit) else {
            throw HubError.badRequest(.invalidQuery, "limit must be an integer from 1 to \(maximum)")
        }
        return limit
    }

    /// The query's `cursor` as `decode` reads it; nil when absent.
    /// - Throws: `HubError` 400 `invalid_query` when `decode` does not read it.
    static func cursor<Cursor>(_ query: FlatDictionary<Substring, Substring>, _ decode: (String) -> Cursor?) throws
        -> Cursor?
    {
        guard let text = query.get("cursor") else { return nil }
        guard let cursor = decode(String(text)) else {
            throw HubError.badRequest(.invalidQuery, "cursor is not one this server gave")
        }
        return cursor
    }
}
