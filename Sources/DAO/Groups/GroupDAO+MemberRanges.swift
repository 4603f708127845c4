import Mongo

/// A range of person ids, in the database's order (their UTF-8 bytes): from `lower`, included, to `upper`, left out;
/// nil is open. A group's ranges (`GroupDAO.memberRanges(of:)`) cover every id, each in exactly one of them.
public struct MemberRange: Sendable, Equatable {
    public let lower: String?
    public let upper: String?

    public init(lower: String?, upper: String?) {
        self.lower = lower
        self.upper = upper
    }
}

/// A group's members read a range at a time, for the fan-out. SecantusDB reads every member a query matches whatever
/// its limit (a page of 128 of 20,000 members costs what all 20,000 do, 300-450 ms), while a range of person ids
/// costs what it holds: so a roster sync (`replace`) stores with the group the ids its ranges begin at
/// (`member_marks`), and the fan-out reads its first 128 persons in moments and the rest while it sends to them.
/// Members added or removed since the roster was synced only make a range larger or smaller: the ranges still cover
/// every id.
extension GroupDAO {
    /// How many persons of a synced roster the first range holds, and each after it.
    static let personsInFirstRange = 128, personsPerRange = 1_024

    /// The ids at which the ranges of roster `persons` (distinct) begin, past the first: the id after the first
    /// `personsInFirstRange` in the database's order, then every `personsPerRange` after it.
    static func rangeMarks(of persons: [String]) -> [String] {
        let ordered = persons.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return Array(stride(from: personsInFirstRange, to: ordered.count, by: personsPerRange).map { ordered[$0] })
    }

    /// The ranges of group `id`'s members, bounded at the marks its last roster sync stored; one open range for a
    /// group that has none (built by single adds, or not there).
    /// - Throws: `DAOError`.
    public func memberRanges(of id: String) async throws -> [MemberRange] {
        let document = try await mapErrors {
            try await groups.findOne(["_id": .string(id)], projection: ["member_marks": 1])
        }
        let marks = document?["member_marks"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let bounds: [String?] = [nil] + marks.map { $0 } + [nil]
        return zip(bounds, bounds.dropFirst()).map { MemberRange(lower: $0, upper: $1) }
    }

    /// The person ids of group `id` in `range`, in no order: one query on the (group, person) index.
    /// - Throws: `DAOError`.
    public func members(of id: String, in range: MemberRange) async throws -> [String] {
        var filter: BSONDocument = ["group": .string(id)]
        var person = BSONDocument()
        if let lower = range.lower { person["$gte"] = .string(lower) }
        if let upper = range.upper { person["$lt"] = .string(upper) }
        if !person.isEmpty { filter["person"] = .document(person) }
        return try await mapErrors {
            try await members.find(filter, options: FindOptions(projection: ["person": 1, "_id": 0]))
        }.compactMap { $0["person"]?.stringValue }
    }
}
