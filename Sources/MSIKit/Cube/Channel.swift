/// A channel of the information cube, as `GET /channel` gives it (legacy shape: `_id`, `name`, `desc`, `areas`).
///
/// Fields the library does not know are ignored; a missing `name`, `desc` or `areas` reads as empty.
public struct Channel: Sendable, Hashable, Identifiable, Decodable {
    /// The channel's id: 24 hex digits (`_id`).
    public var id: String
    /// The channel's name, shown in the app.
    public var name: String
    /// The channel's description.
    public var desc: String
    /// The channel's areas, in the hub's order.
    public var areas: [Area]

    /// Creates a channel from its fields.
    public init(id: String, name: String, desc: String = "", areas: [Area] = []) {
        self.id = id
        self.name = name
        self.desc = desc
        self.areas = areas
    }

    private enum CodingKeys: String, CodingKey {
        case id = "_id", name, desc, areas
    }

    /// Decodes a channel of the legacy JSON, ignoring unknown fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
        desc = try container.decodeIfPresent(String.self, forKey: .desc) ?? ""
        areas = try container.decodeIfPresent([Area].self, forKey: .areas) ?? []
    }
}
