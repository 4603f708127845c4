import Mongo

extension MessageDAO {
    /// The most messages of one subject or group a digest reads for a day.
    public static let digestReadLimit = 500

    /// The messages of a subject (`scope` `.subject`, its topic key) or sent to a group (`.group`, its id) stored
    /// after `after` and by `through` (Unix ms, the timestamp), oldest first, at most `digestReadLimit`: what a digest
    /// of that subject or group may hold, read from the `topic_key.timestamp` or `to.groups.timestamp` index with the
    /// fields a digest judges them by (not the texts beyond the title). Those not sent (waiting for approval or for a
    /// later `send_at`, rejected) and withdrawn are left out.
    /// - Throws: `DAOError`.
    public func digestCandidates(of scope: DeliveryScope, _ id: String, after: Int64, through: Int64) async throws
        -> [Message]
    {
        var filter: BSONDocument =
            scope == .subject ? ["topic_key": .string(id)] : ["to.groups": .string(id)]
        filter["timestamp"] = ["$gt": .int64(after), "$lte": .int64(through)]
        let documents = try await mapErrors {
            try await collection.find(
                filter,
                options: FindOptions(
                    projection: [
                        "msi_key": 1, "title": 1, "timestamp": 1, "topic_key": 1, "to": 1, "sender": 1,
                        "urgency": 1, "override_preferences": 1, "distribution": 1, "withdrawn": 1,
                        "approval.state": 1, "relay.send_at": 1, "display": 1,
                    ],
                    sort: scope == .subject ? ["topic_key": 1, "timestamp": 1] : ["to.groups": 1, "timestamp": 1],
                    limit: Int64(Self.digestReadLimit)))
        }
        return documents.compactMap(Message.init(document:)).filter { message in
            let document = message.document
            if document["withdrawn"] != nil || document["display"]?.boolValue == false { return false }
            if let state = document[path: "approval.state"]?.stringValue, state != "approved" { return false }
            if let sendAt = document[path: "relay.send_at"]?.int64Value, sendAt > through { return false }
            return true
        }
    }
}
