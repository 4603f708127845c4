/// Why a room request from a member's device was refused: a code each adapter maps once, and for too many posts when
/// the person may post again.
public struct RoomRefusal: Error, Sendable, CustomStringConvertible {
    /// The codes of a `RoomRefusal`.
    public enum Code: String, Sendable {
        /// The device's person is not a member of the group (or the device is bound to nobody).
        case notAMember = "not_a_member"
        /// The group lets staff alone post (`posting: staff`).
        case postingNotAllowed = "posting_not_allowed"
        /// Only the group's managers (or an admin) may do this.
        case notAManager = "not_a_manager"
        /// The group does not let members leave by themselves (`self_leave` false).
        case leaveNotAllowed = "leave_not_allowed"
        /// The person posted `ROOM_POSTS_PER_MINUTE` times this minute.
        case tooManyPosts = "too_many_posts"
    }

    public let code: Code
    /// A sentence for a person.
    public let message: String
    /// For `.tooManyPosts`: seconds until the person may post again.
    public let retryAfterSeconds: Int?

    public init(_ code: Code, _ message: String, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "RoomRefusal.\(code.rawValue): \(message)" }
}
