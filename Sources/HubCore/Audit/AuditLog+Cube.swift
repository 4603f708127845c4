import DAO
import Mongo

/// How the cube's elements appear in audit entries: their own fields, never the elements nested in them.
extension AuditLog {
    /// A channel's fields without its areas.
    static func summary(_ channel: Channel?) -> BSONDocument {
        guard let channel else { return BSONDocument() }
        return BSONDocument(channel.document.elements.filter { $0.key != "areas" })
    }

    /// An area's fields without its subjects.
    static func summary(_ area: Area?) -> BSONDocument {
        guard let area else { return BSONDocument() }
        return BSONDocument(area.document.elements.filter { $0.key != "subjects" })
    }

    /// A subject's fields.
    static func summary(_ subject: Subject?) -> BSONDocument {
        subject?.document ?? BSONDocument()
    }

    /// Records a cube write: `cube.<element>.<verb>` on the element's id (a subject's topic key), with the fields
    /// before (edits and deletions) and after (creations and edits).
    func recordCube(_ element: String, _ verb: String, id: String, before: BSONDocument?, after: BSONDocument?) async {
        var change: [(key: String, value: BSONValue)] = []
        if let before { change.append((key: "before", value: .document(before))) }
        if let after { change.append((key: "after", value: .document(after))) }
        await record(
            action: "cube.\(element).\(verb)", target: AuditTarget(kind: element, id: id),
            change: change.isEmpty ? nil : BSONDocument(change))
    }
}
