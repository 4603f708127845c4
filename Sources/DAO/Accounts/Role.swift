/// What a user or token may do.
public enum Role: String, Sendable, CaseIterable, Codable {
    /// The spec's "Super User": edits the cube, sends to every subject, manages users and tokens.
    case admin
    /// Sends messages to the subjects whose access lists let them.
    case communicator
}
