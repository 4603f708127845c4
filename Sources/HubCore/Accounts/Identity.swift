import DAO

/// Who is calling: a user (password or portal session) or an API token.
public struct Identity: Sendable, Equatable {
    /// How the caller proved who they are.
    public enum Kind: Sendable, Equatable { case user, token }

    /// The user's or token's name; stored as a message's `sender`.
    public var name: String
    public var role: Role
    public var kind: Kind

    public init(name: String, role: Role, kind: Kind) {
        self.name = name
        self.role = role
        self.kind = kind
    }

    /// Whether this caller may send to a subject, given the access lists on the way down to it:
    /// admins always; others only when every non-empty list names them.
    public func maySend(through accessLists: [[String]]) -> Bool {
        role == .admin || accessLists.allSatisfy { $0.isEmpty || $0.contains(name) }
    }
}
