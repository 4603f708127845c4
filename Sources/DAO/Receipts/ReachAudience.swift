import Mongo

/// A message's audience as the reach report counts it, stored on the message (`reach_audience`, with
/// `audience_size` when the relay did not write it) once the relay is done with it: the report of a message with
/// 20,000 devices then reads no delivery or subscription to count them.
public struct ReachAudience: Sendable, Equatable {
    /// Where the audience's devices are listed: the message's deliveries, or the wishes for its topic.
    public enum Source: String, Sendable {
        case deliveries, subscriptions
    }

    public var source: Source
    /// The devices the message is for.
    public var devices: Int64
    /// The devices FCM took it for.
    public var fcmAccepted: Int64
    /// The devices FCM called gone.
    public var unreachable: Int64
    /// The devices per platform.
    public var platforms: [Platform: Int64]
    /// The devices held by their persons' choices (`digest`, `off`, a mute): sent the data alone, in the background.
    public var held: Int64 = 0
    /// Every `pageSpan`-th device of the audience in device order (`marks(of:)`): the bounds of the pages of those
    /// not answered; empty while the audience is not stored.
    public var marks: [ObjectID]

    public init(
        source: Source, devices: Int64, fcmAccepted: Int64, unreachable: Int64, platforms: [Platform: Int64],
        marks: [ObjectID] = []
    ) {
        self.source = source
        self.devices = devices
        self.fcmAccepted = fcmAccepted
        self.unreachable = unreachable
        self.platforms = platforms
        self.marks = marks
    }

    /// The audience stored on `message`; nil when none is stored yet.
    public init?(message: BSONDocument) {
        guard let stored = message["reach_audience"]?.documentValue,
            let source = stored["source"]?.stringValue.flatMap(Source.init(rawValue:))
        else { return nil }
        var platforms: [Platform: Int64] = [:]
        for (key, value) in stored["platforms"]?.documentValue ?? [:] {
            if let platform = Platform(rawValue: key) { platforms[platform] = value.int64Value ?? 0 }
        }
        self.init(
            source: source, devices: stored["devices"]?.int64Value ?? 0,
            fcmAccepted: stored["fcm_accepted"]?.int64Value ?? 0,
            unreachable: stored["unreachable"]?.int64Value ?? 0, platforms: platforms,
            marks: stored["marks"]?.arrayValue?.compactMap(\.objectIDValue) ?? [])
        self.held = stored["held"]?.int64Value ?? 0
    }

    /// The audience size the relay wrote on `message` when it fixed its audience (`audience_size`), or the devices
    /// its fan-out found (`relay.components.devices.devices`); nil when neither is there.
    public static func fixedSize(of message: BSONDocument) -> Int64? {
        if let size = message["audience_size"]?.int64Value { return size }
        return message["relay"]?.documentValue?["components"]?.documentValue?["devices"]?.documentValue?["devices"]?
            .int64Value
    }

    /// The stored sub-document.
    var document: BSONDocument {
        [
            "source": .string(source.rawValue), "devices": .int64(devices), "fcm_accepted": .int64(fcmAccepted),
            "unreachable": .int64(unreachable),
            "platforms": .document(
                BSONDocument(
                    platforms.sorted { $0.key.rawValue < $1.key.rawValue }
                        .map { (key: $0.key.rawValue, value: .int64($0.value)) })),
            "marks": .array(marks.map(BSONValue.objectID)), "held": .int64(held),
        ]
    }
}

/// Writes a message's counted audience once (`ReachAudience`).
public struct ReachAudienceDAO: Sendable {
    let messages: MongoCollection

    public init(database: MongoDatabase) {
        self.messages = database.collection(CollectionName.message)
    }

    /// Stores `audience` on message `id` unless one is stored, and its size as `audience_size` unless the relay
    /// wrote one: two conditional `$set`s, so replicas counting at once store the same figures once.
    /// - Throws: `DAOError`.
    public func store(_ audience: ReachAudience, on id: ObjectID) async throws {
        _ = try await mapErrors {
            try await messages.updateOne(
                ["_id": .objectID(id), "reach_audience": ["$exists": false]],
                ["$set": ["reach_audience": .document(audience.document)]])
        }
        _ = try await mapErrors {
            try await messages.updateOne(
                ["_id": .objectID(id), "audience_size": ["$exists": false]],
                ["$set": ["audience_size": .int64(audience.devices)]])
        }
    }
}
