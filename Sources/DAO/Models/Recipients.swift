import Mongo

/// Whom a message is addressed to when it is not a subject's topic: persons (ids from the school's sign-in, bound to
/// devices) and groups (`GroupDAO`), stored as the message's `to`. Resolved to devices when the message is sent.
public struct Recipients: Sendable, Equatable {
    /// Person ids, distinct, in the order given.
    public var persons: [String]
    /// Group ids, distinct, in the order given.
    public var groups: [String]
    /// Persons the groups' message leaves out (`to.except.persons`): a room's author, or whom the sender chose. They
    /// get no push of it and do not catch up with it; a person also named in `persons` is still left out.
    public var exceptPersons: [String]

    public init(persons: [String] = [], groups: [String] = [], exceptPersons: [String] = []) {
        self.persons = persons
        self.groups = groups
        self.exceptPersons = exceptPersons
    }

    /// Reads a stored `to`; nil when the message has none (a topic message).
    public init?(document: BSONDocument?) {
        guard let document else { return nil }
        self.persons = document["persons"]?.arrayValue?.compactMap(\.stringValue) ?? []
        self.groups = document["groups"]?.arrayValue?.compactMap(\.stringValue) ?? []
        self.exceptPersons =
            document["except"]?.documentValue?["persons"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// The `to` sub-document as stored.
    public var document: BSONDocument {
        var document: BSONDocument = [
            "persons": .array(persons.map(BSONValue.string)), "groups": .array(groups.map(BSONValue.string)),
        ]
        if !exceptPersons.isEmpty { document["except"] = ["persons": .array(exceptPersons.map(BSONValue.string))] }
        return document
    }
}
