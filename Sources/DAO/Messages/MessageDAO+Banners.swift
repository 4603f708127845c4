import Mongo

/// Which banners an app shows at launch: the unexpired ones of some topics (and of a device's person and groups).
public struct BannerQuery: Sendable {
    /// The topics (an app's subjects, or a device's subscriptions).
    public var topicKeys: [String]
    /// The device's person, whose banners are in too; nil for an anonymous app or a device bound to nobody.
    public var person: String?
    /// The groups of `person`, whose banners are in too.
    public var groups: [String]
    /// The time (Unix ms) against which expiry and send time are judged.
    public var now: Int64
    /// No banner stored before this (Unix ms) can still be live: it bounds the index scan (`BroadcastService`
    /// derives it from the longest life the send rules allow).
    public var storedSince: Int64
    /// At most this many, newest first.
    public var limit: Int

    public init(
        topicKeys: [String], person: String? = nil, groups: [String] = [], now: Int64, storedSince: Int64,
        limit: Int
    ) {
        self.topicKeys = topicKeys
        self.person = person
        self.groups = person == nil ? [] : groups
        self.now = now
        self.storedSince = storedSince
        self.limit = limit
    }
}

extension MessageDAO {
    /// How long a banner with no expiry (`relay.expires_at`) stays live after it is sent: FCM's default ttl, 28 days.
    public static let bannerLifetimeWithoutExpiryMS: Int64 = 28 * 24 * 3600 * 1000

    /// The live banners of `query`, newest first (timestamp, then `_id`), at most `query.limit`: the messages stored
    /// with `banner: true` whose send time has come (`relay.send_at`), that have not expired (`relay.expires_at`
    /// after `query.now`, or, without one, sent within `bannerLifetimeWithoutExpiryMS`), and that are no sample of
    /// a topic's devices. The banners' queue (`MessageQueue.banner`: the live banners of every audience), then
    /// those messages by `msi_key`.
    /// - Throws: `DAOError`.
    public func activeBanners(_ query: BannerQuery) async throws -> [Message] {
        guard !query.topicKeys.isEmpty || query.person != nil else { return [] }
        let documents = try await queues.find(
            Self.bannerFilter(query), in: .banner,
            options: FindOptions(sort: ["timestamp": -1, "_id": -1], limit: Int64(max(query.limit, 1))))
        return documents.compactMap(Message.init(document:))
    }

    /// The filter of `activeBanners` within the banners' queue.
    public static func bannerFilter(_ query: BannerQuery) -> BSONDocument {
        var audience: [BSONValue] = []
        if !query.topicKeys.isEmpty {
            audience.append(["topic_key": ["$in": .array(query.topicKeys.map(BSONValue.string))]])
        }
        // A device's person's messages and their groups' (never another person's: only these names are asked for).
        if let person = query.person {
            audience.append(["to.persons": .string(person)])
            if !query.groups.isEmpty {
                audience.append(["to.groups": ["$in": .array(query.groups.map(BSONValue.string))]])
            }
        }
        let sentSince = query.now - bannerLifetimeWithoutExpiryMS
        let unexpired: BSONValue = [
            "$or": [
                ["relay.expires_at": ["$gt": .int64(query.now)]],
                // No expiry: live for 28 days from when it went out, its timestamp or its later send time.
                ["relay.expires_at": ["$exists": false], "timestamp": ["$gte": .int64(sentSince)]],
                ["relay.expires_at": ["$exists": false], "relay.send_at": ["$gte": .int64(sentSince)]],
            ]
        ]
        return [
            "banner": true,
            "timestamp": ["$gte": .int64(query.storedSince)],
            "$and": [["$or": .array(audience)], unexpired],
            // `$not` also matches a missing field: sent on arrival.
            "relay.send_at": ["$not": ["$gt": .int64(query.now)]],
            // A sample went to the devices picked, by token: nobody else sees it.
            "sample": ["$exists": false],
            // A withdrawn banner is shown no more.
            "withdrawn": ["$exists": false],
        ]
    }
}
