/// A person's unread messages as counted: in all, and per group (rooms and groups they got messages through).
public struct UnreadCounts: Sendable, Equatable {
    public var total: Int
    public var groups: [String: Int]

    public init(total: Int = 0, groups: [String: Int] = [:]) {
        self.total = total
        self.groups = groups
    }
}

/// What a person has read of one group's messages, by the group's sequence numbers (`PersonUnreadDAO`): every
/// message up to `mark`, and those after it in `read` (read out of order). The person's unread in the group is the
/// group's sequence less these, with no write per message sent.
public struct UnreadThread: Sendable, Equatable {
    /// The group's messages up to this number are read (or were sent before the person was counted in it).
    public var mark: Int64
    /// The numbers after `mark` read one by one.
    public var read: [Int64]

    public init(mark: Int64, read: [Int64] = []) {
        self.mark = mark
        self.read = read
    }

    /// How many of the group's messages up to `sequence` are unread: never below zero.
    public func unread(upTo sequence: Int64) -> Int {
        max(0, Int(sequence - mark) - read.filter { $0 > mark && $0 <= sequence }.count)
    }

    /// The mark moved past the numbers read right after it, and those left out of `read`; nil when it does not move.
    public func compacted() -> UnreadThread? {
        let numbers = Set(read)
        var mark = self.mark
        while numbers.contains(mark + 1) { mark += 1 }
        guard mark > self.mark else { return nil }
        return UnreadThread(mark: mark, read: read.filter { $0 > mark })
    }
}

/// One person's read state: their unread messages named to them (`direct`) and, per group, what they read of its
/// messages (`threads`).
public struct PersonUnread: Sendable, Equatable {
    public var direct: Int
    public var threads: [String: UnreadThread]

    public init(direct: Int = 0, threads: [String: UnreadThread] = [:]) {
        self.direct = direct
        self.threads = threads
    }

    /// The counts at the groups' `sequences` (a group not in it counts nothing).
    public func counts(at sequences: [String: Int64]) -> UnreadCounts {
        var counts = UnreadCounts(total: max(0, direct))
        for (group, thread) in threads {
            let unread = thread.unread(upTo: sequences[group] ?? thread.mark)
            guard unread > 0 else { continue }
            counts.groups[group] = unread
            counts.total += unread
        }
        return counts
    }
}
