import DAO

extension AuditActor {
    /// The caller of the request this task serves, set by the HTTP layer once it knows it; `system` otherwise.
    @TaskLocal public static var current: AuditActor = .system

    /// The actor an API caller is: a user or a token, by name.
    public init(_ identity: Identity) {
        self.init(kind: identity.kind == .token ? .token : .user, name: identity.name)
    }
}
