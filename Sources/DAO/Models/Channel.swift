import Mongo

/// A channel: a top-level document of `icube`, with its areas and their subjects.
public struct Channel: Sendable {
    /// The channel's `_id`.
    public var id: ObjectID
    public var name: String
    public var desc: String
    /// Usernames allowed to send to the channel's subjects; empty means everyone.
    public var access: [String]
    public var areas: [Area]
    /// Whether an admin marked it `"approval": "required"`: every message to its subjects needs a second person.
    public var approvalRequired: Bool
    /// The document as stored, unknown fields included (what GET /channel serves).
    public var document: BSONDocument

    /// Reads a stored channel; nil when its `_id` is not an ObjectId.
    public init?(document: BSONDocument) {
        guard let id = document.objectID("_id") else { return nil }
        self.id = id
        self.name = document.string("name")
        self.desc = document.string("desc")
        self.access = document.strings("access")
        self.areas = document.documents("areas").compactMap { Area(document: $0, channelID: id) }
        self.approvalRequired = document.string("approval") == CubeApproval.required
        self.document = document
    }

    /// The area with `id`, if the channel has it.
    public func area(_ id: ObjectID) -> Area? { areas.first { $0.id == id } }
}

/// An area: an element of a channel's `areas`.
public struct Area: Sendable {
    /// The area's `id`.
    public var id: ObjectID
    public var name: String
    public var desc: String
    /// Usernames allowed to send to the area's subjects; empty means everyone.
    public var access: [String]
    public var subjects: [Subject]
    /// Whether an admin marked it `"approval": "required"`: every message to its subjects needs a second person.
    public var approvalRequired: Bool
    /// The element as stored, unknown fields included.
    public var document: BSONDocument

    /// Reads a stored area; nil when its `id` is not an ObjectId.
    public init?(document: BSONDocument, channelID: ObjectID) {
        guard let id = document.objectID("id") else { return nil }
        self.id = id
        self.name = document.string("name")
        self.desc = document.string("desc")
        self.access = document.strings("access")
        self.subjects = document.documents("subjects").compactMap { Subject(document: $0) }
        self.approvalRequired = document.string("approval") == CubeApproval.required
        self.document = document
    }

    /// The subject with `id`, if the area has it.
    public func subject(_ id: ObjectID) -> Subject? { subjects.first { $0.id == id } }
}

/// A subject: an element of an area's `subjects`, and an FCM topic.
public struct Subject: Sendable {
    /// The subject's `id`.
    public var id: ObjectID
    public var name: String
    public var desc: String
    /// Usernames allowed to send to the subject; empty means everyone.
    public var access: [String]
    /// The FCM topic: channel `_id`-area `id`-subject `id` in hex, as first stored (never recomputed).
    public var topicKey: String
    /// `opt.level` as stored ("Forced", "Recommended" or "").
    public var level: String
    /// `opt.distribution` as stored; nil when it is neither "Alert" nor "Information".
    public var distribution: Distribution?
    /// Whether an admin marked it `"approval": "required"`: every message to it needs a second person.
    public var approvalRequired: Bool
    /// The element as stored, unknown fields included.
    public var document: BSONDocument

    /// Reads a stored subject; nil when its `id` is not an ObjectId.
    public init?(document: BSONDocument) {
        guard let id = document.objectID("id") else { return nil }
        self.id = id
        self.name = document.string("name")
        self.desc = document.string("desc")
        self.access = document.strings("access")
        self.topicKey = document.string("topic_key")
        let options = document["opt"]?.documentValue ?? [:]
        self.level = options.string("level")
        self.distribution = Distribution(rawValue: options.string("distribution"))
        self.approvalRequired = document.string("approval") == CubeApproval.required
        self.document = document
    }

    /// The topic key of a subject at this place in the cube.
    public static func topicKey(channelID: ObjectID, areaID: ObjectID, subjectID: ObjectID) -> String {
        "\(channelID.hex)-\(areaID.hex)-\(subjectID.hex)"
    }
}

/// The values of a channel's, area's or subject's `approval` field.
public enum CubeApproval {
    /// Every message below needs a second person's approval.
    public static let required = "required"
    /// The approval policy's defaults apply (stored as no field at all).
    public static let `default` = "default"

    /// Adds to an update the write of a mark (`true`: `$set` "required"; `false`: `$unset`; nil: nothing) at
    /// `path` ("" for a channel, else the element's positional path and a dot): one positional write, never read first.
    public static func update(
        _ required: Bool?, _ set: inout [(key: String, value: BSONValue)],
        unset: inout [(key: String, value: BSONValue)], path: String
    ) {
        switch required {
        case true?: set.append((path + "approval", .string(Self.required)))
        case false?: unset.append((path + "approval", ""))
        case nil: break
        }
    }

    /// The update document of `set` and `unset` (`$unset` only when it has a field).
    public static func document(
        set: [(key: String, value: BSONValue)],
        unset: [(key: String, value: BSONValue)]
    ) -> BSONDocument {
        var update: BSONDocument = ["$set": .document(BSONDocument(set))]
        if !unset.isEmpty { update["$unset"] = .document(BSONDocument(unset)) }
        return update
    }
}

/// A subject found by its topic key, with the channel and area above it.
public struct SubjectLocation: Sendable {
    public var channel: Channel
    public var area: Area
    public var subject: Subject

    public init(channel: Channel, area: Area, subject: Subject) {
        self.channel = channel
        self.area = area
        self.subject = subject
    }

    /// The `access` lists on the way down, channel first; an empty list lets everyone through.
    public var accessLists: [[String]] { [channel.access, area.access, subject.access] }
}
