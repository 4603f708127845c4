import DAO
import Mongo

/// The normalisation of one legacy `message` document.
///
/// Ids stored as 24 hex digits become ObjectIds, a missing `msi_key` is taken from `_id`, a
/// `timestamp` becomes Unix milliseconds as an int64, and the message is marked as already relayed
/// so that msi-hub's relay never sends it again. Everything else is kept and counted.
struct MessageNormaliser: Sendable {
    /// Values below this are seconds: 10^12 ms is September 2001, before any legacy hub ran.
    static let millisecondsThreshold: Int64 = 1_000_000_000_000
    /// The senders the legacy portal wrote (its two cookie roles).
    static let legacySenders: Set = ["Communicator", "Super User"]
    /// What marks a message as sent by the legacy hub (see `RelayStatus.imported`).
    static let importedRelay: BSONDocument = ["state": .string(RelayStatus.imported.rawValue)]

    private static let knownFields: Set = [
        "_id", "msi_key", "title", "desc", "message", "topic_key", "distribution", "sender", "timestamp", "relay",
    ]

    /// The topic keys of the cube, to report messages to unknown topics; nil skips that check.
    var knownTopicKeys: Set<String>?

    /// The normalised message; `tally` counts every rule that applied.
    func normalise(_ message: BSONDocument, tally: inout RuleTally) -> BSONDocument {
        let id = normaliseID(
            message["_id"], hexRule: .messageIDFromHexString, keptRule: .messageIDNotObjectIDKept,
            place: "_id", tally: &tally)
        let place = id?.legacyJSON ?? "(no _id)"
        var output: [(key: String, value: BSONValue)] = []
        for (key, value) in message {
            switch key {
            case "_id":
                output.append((key, id ?? value))
            case "msi_key":
                let key = normaliseID(
                    value, hexRule: .msiKeyFromHexString, keptRule: .msiKeyNotObjectIDKept,
                    place: "\(place) msi_key", tally: &tally)
                output.append(("msi_key", key ?? value))
            case "timestamp":
                output.append((key, normaliseTimestamp(value, id: id, place: place, tally: &tally)))
            case "relay":
                continue
            case "sender":
                if let sender = value.stringValue, Self.legacySenders.contains(sender) {
                    tally.record(.legacySenderKept, at: "\(place) \(sender)")
                }
                output.append((key, value))
            case "distribution":
                if Distribution(rawValue: value.stringValue ?? "") == nil {
                    tally.record(.messageDistributionUnknown, at: "\(place) \(value.legacyJSON)")
                }
                output.append((key, value))
            case "topic_key":
                if let knownTopicKeys, !knownTopicKeys.contains(value.stringValue ?? "") {
                    tally.record(.messageTopicKeyUnknown, at: "\(place) \(value.legacyJSON)")
                }
                output.append((key, value))
            default:
                if !Self.knownFields.contains(key) {
                    tally.recordUnknownField(key, rule: .messageUnknownFieldsKept, at: "\(place) \(key)")
                }
                output.append((key, value))
            }
        }
        if !message.contains("msi_key"), let id {
            output.append(("msi_key", id))
            tally.record(.msiKeyFromID, at: place)
        }
        if !message.contains("timestamp") {
            output.append(("timestamp", normaliseTimestamp(.null, id: id, place: place, tally: &tally)))
        }
        if !message.contains("distribution") {
            tally.record(.messageDistributionUnknown, at: "\(place) (missing)")
        }
        output.append(("relay", .document(Self.importedRelay)))
        tally.record(.markedImported, at: place)
        if output.first?.key != "_id", let index = output.firstIndex(where: { $0.key == "_id" }) {
            output.insert(output.remove(at: index), at: 0)
        }
        return BSONDocument(output)
    }

    /// The timestamp in Unix milliseconds as an int64; a value that is no time at all is kept.
    private func normaliseTimestamp(
        _ value: BSONValue, id: BSONValue?, place: String,
        tally: inout RuleTally
    ) -> BSONValue {
        var milliseconds: Int64
        switch value {
        case .int64(let int):
            milliseconds = int
        case .int32(let int):
            milliseconds = Int64(int)
            tally.record(.timestampToInt64, at: "\(place) int32")
        case .datetime(let date):
            milliseconds = date
            tally.record(.timestampToInt64, at: "\(place) date")
        case .double(let double) where double.isFinite && abs(double) < 9e18:
            // A fraction means seconds with sub-second precision (Date.now() / 1000).
            milliseconds =
                double < Double(Self.millisecondsThreshold)
                ? Int64((double * 1000).rounded())
                : Int64(double.rounded())
            if double < Double(Self.millisecondsThreshold), double > 0 {
                tally.record(.timestampSecondsToMilliseconds, at: "\(place) \(value.legacyJSON)")
            }
            tally.record(.timestampToInt64, at: "\(place) double")
            return .int64(milliseconds)
        case .string(let text) where Int64(text) != nil:
            milliseconds = Int64(text) ?? 0
            tally.record(.timestampToInt64, at: "\(place) string")
        default:
            guard let created = id?.objectIDValue else { return value }
            tally.record(.timestampFromID, at: "\(place) \(value.legacyJSON)")
            return .int64(Int64(created.timestampSeconds) * 1000)
        }
        if milliseconds > 0, milliseconds < Self.millisecondsThreshold {
            tally.record(.timestampSecondsToMilliseconds, at: "\(place) \(milliseconds)")
            milliseconds *= 1000
        }
        return .int64(milliseconds)
    }

    /// An id as it should be stored: an ObjectId for 24 hex digits, anything else kept and counted.
    private func normaliseID(
        _ value: BSONValue?, hexRule: NormalisationRule, keptRule: NormalisationRule,
        place: String, tally: inout RuleTally
    ) -> BSONValue? {
        switch value {
        case .objectID?:
            return value
        case .string(let hex)? where ObjectID(hex: hex) != nil:
            tally.record(hexRule, at: "\(place) \(hex)")
            return ObjectID(hex: hex).map(BSONValue.objectID)
        case let other?:
            tally.record(keptRule, at: "\(place) \(other.legacyJSON)")
            return other
        case nil:
            return nil
        }
    }
}
