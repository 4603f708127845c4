import DAO

/// Who is calling: a user (password or portal session) or an API token.
public struct Identity: Sendable, Equatable {
    /// How the caller proved who they are.
    public enum Kind: Sendable, Equatable { case user, token }

    /// The user's or token's name; stored as a message's `sender`.
    public var name: String
    /// What the caller may do: admin or communicator.
    public var role: Role
    /// Whether a password or a token proved it.
    public var kind: Kind
    /// Whether the caller has the right `direct`: it may send to persons directly (admins may anyway).
    public var direct: Bool
    /// The user a token acts for (`APIToken.owner`); nil for a user, or a token of its own.
    public var owner: String?

    /// An identity; `direct` is false unless the user or token has the right.
    public init(name: String, role: Role, kind: Kind, direct: Bool = false, owner: String? = nil) {
        self.name = name
        self.role = role
        self.kind = kind
        self.direct = direct
        self.owner = owner
    }

    /// The person behind the call, for the approval rule's "another person": a user is themselves, a token is its
    /// owner (a user sending through their own token is still the author), a token of its own is itself.
    public var person: String { kind == .token ? owner ?? name : name }

    /// Whether this caller may send to a subject, given the access lists on the way down to it:
    /// admins always; others only when every non-empty list names them.
    public func maySend(through accessLists: [[String]]) -> Bool {
        role == .admin || accessLists.allSatisfy { $0.isEmpty || $0.contains(name) }
    }
}
