/// A subject of the cube with whether this device is subscribed to it (what mergeSubData gives).
public struct MergedSubject: Sendable, Hashable, Identifiable {
    /// The subject.
    public var subject: Subject
    /// Whether the device is subscribed to the subject's topic.
    public var subscribed: Bool

    /// Creates a subject's subscription status.
    public init(subject: Subject, subscribed: Bool) {
        self.subject = subject
        self.subscribed = subscribed
    }

    /// The subject's topic key, which identifies it.
    public var id: String { subject.topicKey }
}
