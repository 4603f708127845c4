import DAO

/// Who may send to whom among persons and groups, the one rule POST /message and the portal's send form follow:
/// admins anyone; a communicator or API token a group whose `access` names them; persons directly only admins and
/// callers with the right `direct` (`msi-hub token create --direct`, the portal's checkbox).
public enum RecipientPolicy {
    /// The refusal `identity` meets sending to `recipients`, whose groups are `groups` (as stored); nil when it may.
    public static func refusal(for identity: Identity, recipients: Recipients, groups: [Group]) -> SendRefusal? {
        if identity.role == .admin { return nil }
        if !recipients.persons.isEmpty, !maySendToPersons(identity) {
            return SendRefusal(
                .recipientAccessDenied,
                "\(identity.name) may not send to persons directly: it needs the right direct")
        }
        if let closed = groups.first(where: { !$0.access.contains(identity.name) }) {
            return SendRefusal(
                .recipientAccessDenied,
                "\(identity.name) may not send to the group \(closed.id): its access does not name them")
        }
        return nil
    }

    /// Whether `identity` may send to persons directly: admins, and callers with the right `direct`.
    public static func maySendToPersons(_ identity: Identity) -> Bool {
        identity.role == .admin || identity.direct
    }

    /// Whether `identity` may send to `group` (the portal lists the groups a user may pick).
    public static func maySend(_ identity: Identity, to group: Group) -> Bool {
        identity.role == .admin || group.access.contains(identity.name)
    }
}
