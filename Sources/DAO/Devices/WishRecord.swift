import Mongo

/// One registration's wish for one topic as it stands and as it turned (`want` and `turns` of its
/// `device_subscriptions` document): enough to tell whether the registration was in the audience of a message sent
/// to the topic at a given time.
public struct WishRecord: Sendable, Equatable {
    /// A change of the wish: from `at` (Unix ms) on, the topic is wanted (`want`) or not.
    public struct Turn: Sendable, Equatable {
        public var at: Int64
        public var want: Bool

        public init(at: Int64, want: Bool) {
            self.at = at
            self.want = want
        }

        /// The turn as stored in `turns`.
        var document: BSONDocument { ["at": .int64(at), "want": .bool(want)] }
    }

    /// Whether the topic is wanted now.
    public var want: Bool
    /// The newest turns (at most `SubscriptionDAO.turnsKept`), oldest first. Each changed the wish, so they
    /// alternate; a wish recorded before the hub kept them has none.
    public var turns: [Turn]

    public init(want: Bool, turns: [Turn]) {
        self.want = want
        self.turns = turns
    }

    /// Reads the wish of a stored subscription.
    init(document: BSONDocument) {
        self.want = document["want"]?.boolValue ?? false
        self.turns = (document["turns"]?.arrayValue ?? []).compactMap { value in
            guard let turn = value.documentValue, let at = turn["at"]?.int64Value,
                let want = turn["want"]?.boolValue
            else { return nil }
            return Turn(at: at, want: want)
        }
    }

    /// Whether the topic was wanted at `time` (Unix ms): wanted at or before it and not unwanted before it. Before
    /// the oldest turn kept the wish was the opposite of that turn, unless turns were dropped (as many as are kept):
    /// then it cannot tell, and says no. A wish with no turns has not changed since it was recorded (before the hub
    /// kept turns, or an opt-out from the start) and is what it is now.
    public func wanted(at time: Int64) -> Bool {
        if let last = turns.last(where: { $0.want ? $0.at <= time : $0.at < time }) { return last.want }
        guard let first = turns.first else { return want }
        return turns.count < SubscriptionDAO.turnsKept && !first.want
    }
}
