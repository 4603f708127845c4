import DAO

/// Paces calls to FCM at a rate every replica shares: each second's allowance is taken from the database
/// (`RateWindowDAO`), so N replicas together never make more than `limit` calls a second.
///
/// Calls taken from a window must go out before `margin` of its end (a call that reaches FCM in the next
/// second would count there): `Grant.deadline`. In the last `margin` of a second nothing goes out; the next
/// second's allowance is taken then, for when it begins.
struct RateWindow: Sendable {
    /// A share of one second's allowance.
    struct Grant: Sendable {
        /// How many calls may go.
        var count: Int
        /// When the second ends (Unix ms).
        var windowEnd: Int64
        /// The calls granted must have gone out before this (Unix ms).
        var deadline: Int64 { windowEnd - RateWindow.margin }
    }

    /// How long before its second ends a call taken from it must have gone out, in milliseconds: calls that
    /// reach FCM in the next second would count there.
    static let margin: Int64 = 100

    let rates: RateWindowDAO
    /// The counter the replicas share (one per FCM project and API).
    let key: String
    /// Calls per second, all replicas together.
    let limit: Int
    let now: UnixClock

    /// Takes up to `count` calls (a second's allowance at most) from this second's, waiting for the next second
    /// while the current one is spent or nearly over. In the last `margin` of a second the next second's allowance
    /// is taken, and handed out when that second begins: its database write does not eat into it.
    /// - Throws: `DAOError`; `CancellationError` once the task is cancelled.
    func take(_ count: Int) async throws -> Grant {
        let asked = min(count, max(limit, 1))
        while !Task.isCancelled {
            let current = now()
            var windowEnd = (current / 1000 + 1) * 1000
            if windowEnd - current < Self.margin { windowEnd += 1000 }
            let (granted, _) = try await rates.take(asked, of: key, limit: limit, windowMS: 1000, at: windowEnd - 1)
            if granted > 0 {
                let start = windowEnd - 1000
                let early = start - now()
                if early > 0 { try await Task.sleep(for: .milliseconds(early)) }
                return Grant(count: granted, windowEnd: windowEnd)
            }
            // Spent: the next second's is taken in this one's margin.
            try await Task.sleep(for: .milliseconds(max(1, windowEnd - Self.margin - now())))
        }
        throw CancellationError()
    }
}
