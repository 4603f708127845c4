import Mongo

/// The cube the end-to-end tests seed: one school channel with subjects of every level and distribution.
enum SchoolCube {
    /// One subject of the cube.
    struct Subject: Sendable, Hashable {
        let id, areaID: ObjectID
        let name, level, distribution: String
        var topicKey: String { "\(SchoolCube.channelID.hex)-\(areaID.hex)-\(id.hex)" }
    }

    static let channelID = ObjectID(hex: "6a0000000000000000000001")!
    static let campusID = ObjectID(hex: "6a0000000000000000000002")!
    static let clubsID = ObjectID(hex: "6a0000000000000000000003")!

    /// Closures: every phone gets them and cannot leave.
    static let closures = Subject(
        id: ObjectID(hex: "6a0000000000000000000011")!, areaID: campusID, name: "Closures",
        level: "Forced", distribution: "Alert")
    /// Exams: given to every phone, which may leave.
    static let exams = Subject(
        id: ObjectID(hex: "6a0000000000000000000012")!, areaID: campusID, name: "Exams",
        level: "Recommended", distribution: "Alert")
    /// Events: given to every phone, which may leave.
    static let events = Subject(
        id: ObjectID(hex: "6a0000000000000000000013")!, areaID: campusID, name: "Events",
        level: "Recommended", distribution: "Information")
    /// Chess: only phones that join it.
    static let chess = Subject(
        id: ObjectID(hex: "6a0000000000000000000014")!, areaID: clubsID, name: "Chess",
        level: "", distribution: "Information")
    /// Choir: only phones that join it.
    static let choir = Subject(
        id: ObjectID(hex: "6a0000000000000000000015")!, areaID: clubsID, name: "Choir",
        level: "", distribution: "Alert")

    /// A topic key of the channel's shape that names no subject.
    static let unknownTopic = "\(channelID.hex)-\(clubsID.hex)-\(channelID.hex)"

    static let subjects = [closures, exams, events, chess, choir]
    /// What a phone receives without choosing anything.
    static let automatic: Set<String> = [closures.topicKey, exams.topicKey, events.topicKey]

    /// The channel document, as the legacy hub stores it.
    static var document: BSONDocument {
        func area(_ id: ObjectID, _ name: String) -> BSONValue {
            let subjects = Self.subjects.filter { $0.areaID == id }.map { subject -> BSONValue in
                [
                    "id": .objectID(subject.id), "name": .string(subject.name), "desc": .string("\(subject.name) news"),
                    "access": [], "tags": [], "topic_key": .string(subject.topicKey),
                    "opt": ["level": .string(subject.level), "distribution": .string(subject.distribution)],
                ]
            }
            return ["id": .objectID(id), "name": .string(name), "desc": "", "access": [], "subjects": .array(subjects)]
        }
        return [
            "_id": .objectID(channelID), "name": "Northfield School", "desc": "Everything at school", "access": [],
            "areas": [area(campusID, "Campus"), area(clubsID, "Clubs")],
        ]
    }
}
