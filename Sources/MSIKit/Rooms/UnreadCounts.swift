/// A person's unread messages to persons, groups and rooms, as the hub counts them across their devices: what
/// `MSIClient.unreadCounts()` answers (`GET /device/:deviceID/unread`).
public struct UnreadCounts: Sendable, Hashable, Decodable {
    /// Every unread message (the app's badge).
    public var total: Int
    /// Per room and group id, those it has unread messages of.
    public var groups: [String: Int]

    public init(total: Int, groups: [String: Int]) {
        self.total = total
        self.groups = groups
    }
}
