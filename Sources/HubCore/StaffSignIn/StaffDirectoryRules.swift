import DAO

/// Who may enter the portal through the OpenID provider, and with what: the claim naming the user
/// (`OIDC_USERNAME_CLAIM`, default `email`), the claim listing their groups (`OIDC_ROLE_CLAIM`, default `groups`),
/// the groups that make an admin or a communicator (`OIDC_ADMIN_GROUPS`, `OIDC_COMMUNICATOR_GROUPS`), and the
/// channels and areas each group may send to (`OIDC_ACCESS_MAP`). Read from the id_token at every sign-in.
public struct StaffDirectoryRules: Sendable, Equatable {
    public var usernameClaim: String
    public var roleClaim: String
    public var adminGroups: Set<String>
    public var communicatorGroups: Set<String>
    /// The channels and areas a provider group puts its members on the access list of.
    public var accessMap: [String: Set<CubeNode>]

    public init(
        usernameClaim: String = "email", roleClaim: String = "groups", adminGroups: Set<String> = [],
        communicatorGroups: Set<String> = [], accessMap: [String: Set<CubeNode>] = [:]
    ) {
        self.usernameClaim = usernameClaim
        self.roleClaim = roleClaim
        self.adminGroups = adminGroups
        self.communicatorGroups = communicatorGroups
        self.accessMap = accessMap
    }

    /// The role `groups` give: admin when one is an admin group, else communicator when one is a communicator
    /// group, else none (the sign-in is refused).
    public func role(for groups: [String]) -> Role? {
        if groups.contains(where: adminGroups.contains) { return .admin }
        if groups.contains(where: communicatorGroups.contains) { return .communicator }
        return nil
    }

    /// The nodes whose access lists `groups` put the user on.
    public func granted(to groups: [String]) -> Set<CubeNode> {
        groups.reduce(into: Set<CubeNode>()) { $0.formUnion(accessMap[$1] ?? []) }
    }

    /// Every node the map names: the access lists sign-ins manage (a user is taken off one their groups no longer
    /// map to; lists the map does not name are the admins' alone).
    public var managedNodes: Set<CubeNode> {
        accessMap.values.reduce(into: Set<CubeNode>()) { $0.formUnion($1) }
    }
}
