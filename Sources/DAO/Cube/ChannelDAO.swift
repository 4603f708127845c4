import Mongo

/// Channels: the top-level documents of `icube`.
public struct ChannelDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.icube)
    }

    /// Every channel document as stored, in the database's natural order (GET /channel's source).
    /// - Throws: `DAOError`.
    public func getAllDocuments() async throws -> [BSONDocument] {
        try await mapErrors { try await collection.find() }
    }

    /// Every channel, with its areas and subjects.
    /// - Throws: `DAOError`.
    public func getAll() async throws -> [Channel] {
        try await getAllDocuments().compactMap(Channel.init(document:))
    }

    /// The channel with `id`.
    /// - Throws: `DAOError` `.channelNotFound`.
    public func get(_ id: ObjectID) async throws -> Channel {
        let document = try await mapErrors { try await collection.findOne(["_id": .objectID(id)]) }
        guard let document, let channel = Channel(document: document) else {
            throw DAOError(.channelNotFound, "no channel has the id \(id.hex)")
        }
        return channel
    }

    /// Adds a channel with no areas and returns it as stored.
    /// - Throws: `DAOError`.
    public func add(_ draft: ChannelDraft) async throws -> Channel {
        var document: BSONDocument = [
            "_id": .objectID(ObjectID()),
            "name": .string(draft.name),
            "desc": .string(draft.desc),
            "access": (draft.access ?? []).bson,
            "areas": [],
        ]
        if draft.approvalRequired == true { document["approval"] = .string(CubeApproval.required) }
        try await mapErrors { _ = try await collection.insertOne(document) }
        guard let channel = Channel(document: document) else {
            preconditionFailure("a channel made here has an ObjectId _id")
        }
        return channel
    }

    /// Replaces the channel's name and desc (and access and the approval mark, when given), keeping every other field.
    /// - Throws: `DAOError` `.channelNotFound`.
    public func update(_ id: ObjectID, _ draft: ChannelDraft) async throws -> Channel {
        var set: [(key: String, value: BSONValue)] = [("name", .string(draft.name)), ("desc", .string(draft.desc))]
        if let access = draft.access { set.append(("access", access.bson)) }
        var unset: [(key: String, value: BSONValue)] = []
        CubeApproval.update(draft.approvalRequired, &set, unset: &unset, path: "")
        let updated = try await mapErrors {
            try await collection.findOneAndUpdate(["_id": .objectID(id)], CubeApproval.document(set: set, unset: unset))
        }
        guard let updated, let channel = Channel(document: updated) else {
            throw DAOError(.channelNotFound, "no channel has the id \(id.hex)")
        }
        return channel
    }

    /// Deletes the channel with its areas and subjects.
    /// - Throws: `DAOError` `.channelNotFound`.
    public func delete(_ id: ObjectID) async throws {
        let deleted = try await mapErrors { try await collection.deleteOne(["_id": .objectID(id)]) }
        guard deleted == 1 else { throw DAOError(.channelNotFound, "no channel has the id \(id.hex)") }
    }
}

extension MongoCollection {
    /// Why a positional write matched nothing: which of channel, area and subject is missing.
    ///
    /// Read only after a write matched nothing, to name the missing element; never to decide a write.
    func missingCubeElement(channelID: ObjectID, areaID: ObjectID, subjectID: ObjectID? = nil) async throws -> DAOError
    {
        let document = try await mapErrors { try await findOne(["_id": .objectID(channelID)]) }
        guard let document, let channel = Channel(document: document) else {
            return DAOError(.channelNotFound, "no channel has the id \(channelID.hex)")
        }
        guard let area = channel.area(areaID) else {
            return DAOError(.areaNotFound, "channel \(channelID.hex) has no area with the id \(areaID.hex)")
        }
        if let subjectID, area.subject(subjectID) == nil {
            return DAOError(.subjectNotFound, "area \(areaID.hex) has no subject with the id \(subjectID.hex)")
        }
        // Everything exists now: a concurrent writer deleted and re-added it; report the deepest level.
        return subjectID == nil
            ? DAOError(.areaNotFound, "channel \(channelID.hex) has no area with the id \(areaID.hex)")
            : DAOError(.subjectNotFound, "area \(areaID.hex) has no subject with the id \(subjectID?.hex ?? "")")
    }
}
