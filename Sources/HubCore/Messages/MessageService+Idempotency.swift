import Crypto
import DAO
import HubModel
import Mongo

extension MessageService {
    /// The longest `Idempotency-Key` accepted.
    public static let maximumIdempotencyKeyLength = 255

    /// Stores the message of `draft` within the write deadline; with `idempotencyKey`, at most once per key.
    ///
    /// The message's ids are chosen before anything is written. With a key, the key's record holds the whole
    /// message document: a request that finds the key recorded with the same fingerprint stores that document
    /// (or finds it stored: its `_id` makes the insert idempotent) and returns it, exactly as the first answer
    /// had it; one with another fingerprint is refused. Two requests with one key at once both end with the
    /// same message, stored once.
    /// Nothing is stored while the relay is further behind than its bound (`RelayBacklog`).
    /// - Throws: `SendRefusal.relayBehind`, `.idempotencyKeyReused`; `DAOError` as `send`.
    func store(_ draft: MessageDraft, idempotencyKey: String?, fingerprint: String, sender: String) async throws
        -> Message
    {
        if let refusal = await backlog.refusal() { throw refusal }
        let deadline = ContinuousClock.now.advanced(by: messages.writeDeadline)
        let document = messages.document(for: draft)
        guard let idempotencyKey else {
            return await recorded(try await messages.add(document: document, deadline: deadline))
        }
        switch try await idempotencyKeys.claim(
            sender: sender, key: idempotencyKey, fingerprint: fingerprint,
            message: document, deadline: deadline)
        {
        case .claimed:
            return await recorded(try await messages.add(document: document, deadline: deadline))
        case .earlier(let first):
            // Stored again (a no-op when it is) as any worker claims it: its first request's ticket is not ours.
            return try await messages.add(document: RelayProgressDAO.shown(first, sent: false), deadline: deadline)
        case .otherRequest:
            throw SendRefusal(
                .idempotencyKeyReused,
                "this Idempotency-Key was used within the last 24 hours for another message")
        }
    }

    /// Whether messages are not being stored in time now: an insert has waited for the database longer than the
    /// write deadline and still waits (readiness reports it).
    public var writesStalled: Bool { messages.insertsStalled }

    /// How long a message's insert may go unacknowledged before the hub stops waiting for it.
    public var writeDeadline: Duration { messages.writeDeadline }

    /// Whether `key` can be an `Idempotency-Key`: 1 to 255 visible ASCII characters.
    public static func isValidIdempotencyKey(_ key: String) -> Bool {
        (1...maximumIdempotencyKeyLength).contains(key.utf8.count) && key.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }
}

extension MessageService.Submission {
    /// What makes two submissions the same request: SHA-256 over every field, in hex.
    var fingerprint: String {
        var fields: BSONDocument = [
            "title": .string(title), "desc": .string(desc), "message": .string(message), "topic_key": .string(topicKey),
            "distribution": .string(distribution.rawValue), "ttl": ttl.map(BSONValue.int64) ?? .null,
            "send_at": sendAt.map(BSONValue.int64) ?? .null,
            "to": recipients.map { .document($0.document) } ?? .null,
            "data": .document(
                BSONDocument(data.sorted { $0.key < $1.key }.map { (key: $0.key, value: BSONValue.string($0.value)) })),
        ]
        // Only when not the default: a request repeated across an upgrade still matches its earlier fingerprint.
        if urgency != .default { fields["urgency"] = .string(urgency.rawValue) }
        if let ack { fields["ack"] = .document(ack.document) }
        if overridePreferences { fields["override_preferences"] = true }
        if broadcast != Broadcast() { fields["broadcast"] = .document(broadcast.document) }
        return Hex.encode(SHA256.hash(data: fields.bytes))
    }
}
