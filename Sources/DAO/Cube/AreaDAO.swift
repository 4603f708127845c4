import Mongo

/// Areas: the elements of a channel's `areas`, written in place with positional operators.
public struct AreaDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.icube)
    }

    /// Adds an area (new `id`, empty `access` unless given, empty `subjects`) to the channel.
    /// - Throws: `DAOError` `.channelNotFound`.
    public func add(channelID: ObjectID, _ draft: AreaDraft) async throws -> Area {
        var area: BSONDocument = [
            "id": .objectID(ObjectID()),
            "name": .string(draft.name),
            "desc": .string(draft.desc),
            "access": (draft.access ?? []).bson,
            "subjects": [],
        ]
        if draft.approvalRequired == true { area["approval"] = .string(CubeApproval.required) }
        let result = try await mapErrors {
            try await collection.updateOne(["_id": .objectID(channelID)], ["$push": ["areas": .document(area)]])
        }
        guard result.matchedCount == 1 else {
            throw DAOError(.channelNotFound, "no channel has the id \(channelID.hex)")
        }
        guard let stored = Area(document: area, channelID: channelID) else {
            preconditionFailure("an area made here has an ObjectId id")
        }
        return stored
    }

    /// Replaces the area's name and desc (and access and the approval mark, when given), keeping every other field.
    /// - Throws: `DAOError` `.channelNotFound` or `.areaNotFound`.
    public func update(channelID: ObjectID, areaID: ObjectID, _ draft: AreaDraft) async throws -> Area {
        // `areas.$[a]` rather than `areas.$`: the same single atomic write, and it works in
        // findAndModify on every server we meet (SecantusDB refuses `$` there).
        var set: [(key: String, value: BSONValue)] = [
            ("areas.$[a].name", .string(draft.name)), ("areas.$[a].desc", .string(draft.desc)),
        ]
        if let access = draft.access { set.append(("areas.$[a].access", access.bson)) }
        var unset: [(key: String, value: BSONValue)] = []
        CubeApproval.update(draft.approvalRequired, &set, unset: &unset, path: "areas.$[a].")
        let updated = try await mapErrors {
            try await collection.findOneAndUpdate(
                ["_id": .objectID(channelID), "areas.id": .objectID(areaID)],
                CubeApproval.document(set: set, unset: unset),
                options: FindOneAndUpdateOptions(arrayFilters: [["a.id": .objectID(areaID)]])
            )
        }
        guard let updated, let area = Channel(document: updated)?.area(areaID) else {
            throw try await collection.missingCubeElement(channelID: channelID, areaID: areaID)
        }
        return area
    }

    /// Removes the area and its subjects from the channel.
    /// - Throws: `DAOError` `.channelNotFound` or `.areaNotFound`.
    public func delete(channelID: ObjectID, areaID: ObjectID) async throws {
        let result = try await mapErrors {
            try await collection.updateOne(
                ["_id": .objectID(channelID), "areas.id": .objectID(areaID)],
                ["$pull": ["areas": ["id": .objectID(areaID)]]]
            )
        }
        guard result.matchedCount == 1 else {
            throw try await collection.missingCubeElement(channelID: channelID, areaID: areaID)
        }
    }
}
