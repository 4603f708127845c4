/// One rule of the normalisation of legacy documents; its `key` names its count in the report.
///
/// Rules that change a document say so in `summary`; the others only report what they found and
/// leave the document as it is (an existing `topic_key`, for one, is never changed: phones are
/// subscribed to it).
public enum NormalisationRule: String, CaseIterable, Sendable {
    // MARK: icube
    /// A channel `_id`, area `id` or subject `id` stored as 24 hex digits became an ObjectId.
    case cubeIDFromHexString = "icube.id_from_hex_string"
    /// An id that is neither an ObjectId nor 24 hex digits was kept as it is.
    case cubeIDNotObjectIDKept = "icube.id_not_objectid_kept"
    /// A missing `access` array (channel, area or subject) became `[]`.
    case accessAdded = "icube.access_added"
    /// A channel's missing `areas` array became `[]`.
    case areasAdded = "icube.areas_added"
    /// An area's missing `subjects` array became `[]`.
    case subjectsAdded = "icube.subjects_added"
    /// A subject's missing `tags` array became `[]`.
    case tagsAdded = "icube.tags_added"
    /// A subject's missing `opt.level` became "" (and a missing `opt` `{"level": ""}`).
    case levelAdded = "icube.level_added"
    /// A subject has no `opt.distribution`: reported, left as it is.
    case distributionMissing = "icube.distribution_missing"
    /// A subject's `opt.distribution` is neither "Alert" nor "Information": reported, left as it is.
    case distributionUnknown = "icube.distribution_unknown"
    /// A subject's missing `topic_key` was computed from the channel, area and subject ids.
    case topicKeyComputed = "icube.topic_key_computed"
    /// A subject's `topic_key` does not match its ids: reported, never changed.
    case topicKeyMismatchKept = "icube.topic_key_mismatch_kept"
    /// A subject has no `topic_key` and ids that are not ObjectIds, so none could be computed.
    case topicKeyNotComputable = "icube.topic_key_not_computable"
    /// Fields msi-hub does not know (at any level of a channel) were kept.
    case cubeUnknownFieldsKept = "icube.unknown_fields_kept"

    // MARK: message
    /// A message `_id` stored as 24 hex digits became an ObjectId.
    case messageIDFromHexString = "message.id_from_hex_string"
    /// A message `_id` that is neither an ObjectId nor 24 hex digits was kept as it is.
    case messageIDNotObjectIDKept = "message.id_not_objectid_kept"
    /// An `msi_key` stored as 24 hex digits became an ObjectId.
    case msiKeyFromHexString = "message.msi_key_from_hex_string"
    /// A missing `msi_key` was taken from the message's `_id`.
    case msiKeyFromID = "message.msi_key_from_id"
    /// An `msi_key` that is neither an ObjectId nor 24 hex digits was kept as it is.
    case msiKeyNotObjectIDKept = "message.msi_key_not_objectid_kept"
    /// A `timestamp` in seconds (below 10^12) became milliseconds.
    case timestampSecondsToMilliseconds = "message.timestamp_seconds_to_ms"
    /// A `timestamp` stored as a double, int32, date or decimal string became an int64.
    case timestampToInt64 = "message.timestamp_to_int64"
    /// A missing or unreadable `timestamp` was taken from the ObjectId `_id`'s creation time.
    case timestampFromID = "message.timestamp_from_id"
    /// A `sender` of the legacy portal ("Communicator", "Super User") was kept.
    case legacySenderKept = "message.legacy_sender_kept"
    /// A message's `distribution` is neither "Alert" nor "Information": reported, left as it is.
    case messageDistributionUnknown = "message.distribution_unknown"
    /// A message's `topic_key` names no subject of the cube: reported, left as it is.
    case messageTopicKeyUnknown = "message.topic_key_unknown"
    /// The message was marked as already relayed (`relay: {state: "imported"}`): it is never sent again.
    case markedImported = "message.marked_imported"
    /// Fields msi-hub does not know were kept.
    case messageUnknownFieldsKept = "message.unknown_fields_kept"

    /// The report key: the collection, a dot, and the rule's name.
    public var key: String { rawValue }

    /// The collection whose documents the rule applies to.
    public var collection: String { String(rawValue.prefix(while: { $0 != "." })) }

    /// Whether the rule changes documents (false: it only reports what it found).
    public var changesDocuments: Bool {
        switch self {
        case .cubeIDNotObjectIDKept, .distributionMissing, .distributionUnknown, .topicKeyMismatchKept,
            .topicKeyNotComputable, .cubeUnknownFieldsKept, .messageIDNotObjectIDKept, .msiKeyNotObjectIDKept,
            .legacySenderKept, .messageDistributionUnknown, .messageTopicKeyUnknown, .messageUnknownFieldsKept:
            false
        default:
            true
        }
    }
}
