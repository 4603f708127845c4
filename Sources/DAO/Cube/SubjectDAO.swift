import Mongo

/// Subjects: the elements of an area's `subjects`, written in place with positional operators.
public struct SubjectDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.icube)
    }

    /// Adds a subject (new `id`, `topic_key`, `opt`, empty `access` unless given, empty `tags`).
    /// - Throws: `DAOError` `.channelNotFound` or `.areaNotFound`.
    public func add(channelID: ObjectID, areaID: ObjectID, _ draft: SubjectDraft) async throws -> Subject {
        let subjectID = ObjectID()
        var subject: BSONDocument = [
            "id": .objectID(subjectID),
            "name": .string(draft.name),
            "desc": .string(draft.desc),
            "access": (draft.access ?? []).bson,
            "tags": [],
            "opt": ["level": .string(draft.level.rawValue), "distribution": .string(draft.distribution.rawValue)],
            "topic_key": .string(Subject.topicKey(channelID: channelID, areaID: areaID, subjectID: subjectID)),
        ]
        if draft.approvalRequired == true { subject["approval"] = .string(CubeApproval.required) }
        let result = try await mapErrors {
            try await collection.updateOne(
                ["_id": .objectID(channelID), "areas.id": .objectID(areaID)],
                ["$push": ["areas.$.subjects": .document(subject)]]
            )
        }
        guard result.matchedCount == 1 else {
            throw try await collection.missingCubeElement(channelID: channelID, areaID: areaID)
        }
        guard let stored = Subject(document: subject) else {
            preconditionFailure("a subject made here has an ObjectId id")
        }
        return stored
    }

    /// Replaces the subject's name, desc, `opt.level` and `opt.distribution` (and access, when
    /// given), keeping every other field, its `topic_key` included.
    /// - Throws: `DAOError` `.channelNotFound`, `.areaNotFound` or `.subjectNotFound`.
    public func update(
        channelID: ObjectID, areaID: ObjectID, subjectID: ObjectID,
        _ draft: SubjectDraft
    ) async throws -> Subject {
        let path = "areas.$[a].subjects.$[s]"
        var set: [(key: String, value: BSONValue)] = [
            ("\(path).name", .string(draft.name)),
            ("\(path).desc", .string(draft.desc)),
            ("\(path).opt.level", .string(draft.level.rawValue)),
            ("\(path).opt.distribution", .string(draft.distribution.rawValue)),
        ]
        if let access = draft.access { set.append(("\(path).access", access.bson)) }
        var unset: [(key: String, value: BSONValue)] = []
        CubeApproval.update(draft.approvalRequired, &set, unset: &unset, path: path + ".")
        let updated = try await mapErrors {
            try await collection.findOneAndUpdate(
                Self.filter(channelID, areaID, subjectID),
                CubeApproval.document(set: set, unset: unset),
                options: FindOneAndUpdateOptions(arrayFilters: [
                    ["a.id": .objectID(areaID)], ["s.id": .objectID(subjectID)],
                ])
            )
        }
        guard let updated, let subject = Channel(document: updated)?.area(areaID)?.subject(subjectID) else {
            throw try await collection.missingCubeElement(channelID: channelID, areaID: areaID, subjectID: subjectID)
        }
        return subject
    }

    /// Removes the subject from its area.
    /// - Throws: `DAOError` `.channelNotFound`, `.areaNotFound` or `.subjectNotFound`.
    public func delete(channelID: ObjectID, areaID: ObjectID, subjectID: ObjectID) async throws {
        let result = try await mapErrors {
            try await collection.updateOne(
                Self.filter(channelID, areaID, subjectID),
                ["$pull": ["areas.$.subjects": ["id": .objectID(subjectID)]]]
            )
        }
        guard result.matchedCount == 1 else {
            throw try await collection.missingCubeElement(channelID: channelID, areaID: areaID, subjectID: subjectID)
        }
    }

    /// The subject whose `topic_key` is `topicKey`, with its channel and area.
    /// - Throws: `DAOError` `.topicNotFound`.
    public func find(topicKey: String) async throws -> SubjectLocation {
        let document = try await mapErrors {
            try await collection.findOne(["areas.subjects.topic_key": .string(topicKey)])
        }
        if let document, let channel = Channel(document: document) {
            for area in channel.areas {
                if let subject = area.subjects.first(where: { $0.topicKey == topicKey }) {
                    return SubjectLocation(channel: channel, area: area, subject: subject)
                }
            }
        }
        throw DAOError(.topicNotFound, "no subject has the topic key \(topicKey)")
    }

    /// Matches the channel only when its area holds the subject, so a write matching nothing means "missing".
    private static func filter(_ channelID: ObjectID, _ areaID: ObjectID, _ subjectID: ObjectID) -> BSONDocument {
        [
            "_id": .objectID(channelID),
            "areas": ["$elemMatch": ["id": .objectID(areaID), "subjects.id": .objectID(subjectID)]],
        ]
    }
}
