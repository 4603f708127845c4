import Mongo

/// A channel, or an area of one: where an `access` list is (the OpenID provider's access map names them as
/// `<channel id>` or `<channel id>-<area id>`, the first two parts of a topic key).
public struct CubeNode: Hashable, Sendable, CustomStringConvertible {
    public var channelID: ObjectID
    /// Nil for the channel itself.
    public var areaID: ObjectID?

    public init(channelID: ObjectID, areaID: ObjectID? = nil) {
        self.channelID = channelID
        self.areaID = areaID
    }

    /// Reads `<channel id>` or `<channel id>-<area id>` (24 hex digits each); nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let channel = ObjectID(hex: String(parts[0])) else { return nil }
        channelID = channel
        if parts.count == 2 {
            guard let area = ObjectID(hex: String(parts[1])) else { return nil }
            areaID = area
        }
    }

    public var description: String { areaID.map { "\(channelID.hex)-\($0.hex)" } ?? channelID.hex }
}

/// One name granted or taken from a channel's or an area's `access` list, in place (`$addToSet`, `$pull`; the
/// area by an array filter on its id), never the list read and written back.
public struct CubeAccessDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.icube)
    }

    /// Adds `name` to `node`'s access list (`granted`) or removes it.
    /// - Returns: whether the node exists.
    /// - Throws: `DAOError`.
    @discardableResult
    public func set(_ name: String, granted: Bool, on node: CubeNode) async throws -> Bool {
        let verb = granted ? "$addToSet" : "$pull"
        let result = try await mapErrors {
            if let area = node.areaID {
                return try await collection.updateOne(
                    ["_id": .objectID(node.channelID), "areas.id": .objectID(area)],
                    [verb: ["areas.$[a].access": .string(name)]],
                    options: UpdateOptions(arrayFilters: [["a.id": .objectID(area)]]))
            }
            return try await collection.updateOne(
                ["_id": .objectID(node.channelID)], [verb: ["access": .string(name)]])
        }
        return result.matchedCount == 1
    }
}
