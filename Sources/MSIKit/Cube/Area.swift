/// An area of a channel (`areas[i]`: `id`, `name`, `desc`, `subjects`).
public struct Area: Sendable, Hashable, Identifiable, Decodable {
    /// The area's id: 24 hex digits.
    public var id: String
    /// The area's name, shown in the app.
    public var name: String
    /// The area's description.
    public var desc: String
    /// The area's subjects, in the hub's order.
    public var subjects: [Subject]

    /// Creates an area from its fields.
    public init(id: String, name: String, desc: String = "", subjects: [Subject] = []) {
        self.id = id
        self.name = name
        self.desc = desc
        self.subjects = subjects
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, desc, subjects
    }

    /// Decodes an area of the legacy JSON, ignoring unknown fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
        desc = try container.decodeIfPresent(String.self, forKey: .desc) ?? ""
        subjects = try container.decodeIfPresent([Subject].self, forKey: .subjects) ?? []
    }
}
