/// How a device was reached by a message to persons and groups: the `audience` (and `group`) of its token send's data.
public enum FCMAudience: Sendable, Hashable {
    /// Its person was named in the message's `to.persons`.
    case person
    /// Its person is a member of this group of the message's `to.groups`.
    case group(String)
}
