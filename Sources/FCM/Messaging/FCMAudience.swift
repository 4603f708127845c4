/// How a device was reached by a message sent device by device: the `audience` (and `group`) of its token send's data.
public enum FCMAudience: Sendable, Hashable {
    /// Its person was named in the message's `to.persons`.
    case person
    /// Its person is a member of this group of the message's `to.groups`.
    case group(String)
    /// It was picked for a sample of the message's topic (`sample`, `cohort`): the data keeps `topic_key`.
    case cohort
    /// A person's daily digest (`FCMDigest`): `audience` "digest" in the data, which no message has.
    case digest
}
