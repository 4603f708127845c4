import DAO
import Mongo

/// The normalisation of one legacy `icube` document (a channel with its areas and subjects).
///
/// Only additions and id retyping: ids stored as 24 hex digits become ObjectIds, missing `access`,
/// `areas`, `subjects` and `tags` arrays become `[]`, a missing `opt.level` becomes "", a missing
/// `topic_key` is computed. Everything else, unknown fields and mismatched topic keys included, is
/// kept as it is and counted. Keys keep their order; added keys go last.
struct ChannelNormaliser: Sendable {
    private static let channelFields: Set = ["_id", "name", "desc", "access", "areas"]
    private static let areaFields: Set = ["id", "name", "desc", "access", "subjects"]
    private static let subjectFields: Set = ["id", "name", "desc", "access", "topic_key", "opt", "tags"]
    private static let optionFields: Set = ["level", "distribution"]

    /// The normalised channel; `tally` counts every rule that applied.
    func normalise(_ channel: BSONDocument, tally: inout RuleTally) -> BSONDocument {
        let channelID = normaliseID(channel["_id"], place: "channel", tally: &tally)
        let place = channelID?.legacyJSON ?? "(no _id)"
        var output: [(key: String, value: BSONValue)] = []
        for (key, value) in channel {
            switch key {
            case "_id":
                output.append((key, channelID ?? value))
            case "areas":
                guard case .array(let areas) = value else {
                    output.append((key, value))
                    continue
                }
                let normalised = areas.map { area -> BSONValue in
                    guard case .document(let area) = area else { return area }
                    return .document(normaliseArea(area, channelID: channelID, place: place, tally: &tally))
                }
                output.append((key, .array(normalised)))
            default:
                if !Self.channelFields.contains(key) {
                    tally.recordUnknownField(key, rule: .cubeUnknownFieldsKept, at: "\(place) \(key)")
                }
                output.append((key, value))
            }
        }
        if !channel.contains("access") {
            output.append(("access", []))
            tally.record(.accessAdded, at: place)
        }
        if !channel.contains("areas") {
            output.append(("areas", []))
            tally.record(.areasAdded, at: place)
        }
        return BSONDocument(output)
    }

    private func normaliseArea(
        _ area: BSONDocument, channelID: BSONValue?, place channelPlace: String,
        tally: inout RuleTally
    ) -> BSONDocument {
        let areaID = normaliseID(area["id"], place: "\(channelPlace) area", tally: &tally)
        let place = "\(channelPlace)/\(areaID?.legacyJSON ?? "(no id)")"
        var output: [(key: String, value: BSONValue)] = []
        for (key, value) in area {
            switch key {
            case "id":
                output.append((key, areaID ?? value))
            case "subjects":
                guard case .array(let subjects) = value else {
                    output.append((key, value))
                    continue
                }
                let normalised = subjects.map { subject -> BSONValue in
                    guard case .document(let subject) = subject else { return subject }
                    return .document(
                        normaliseSubject(
                            subject, channelID: channelID, areaID: areaID, place: place,
                            tally: &tally))
                }
                output.append((key, .array(normalised)))
            default:
                if !Self.areaFields.contains(key) {
                    tally.recordUnknownField("areas.\(key)", rule: .cubeUnknownFieldsKept, at: "\(place) \(key)")
                }
                output.append((key, value))
            }
        }
        if !area.contains("access") {
            output.append(("access", []))
            tally.record(.accessAdded, at: place)
        }
        if !area.contains("subjects") {
            output.append(("subjects", []))
            tally.record(.subjectsAdded, at: place)
        }
        return BSONDocument(output)
    }

    private func normaliseSubject(
        _ subject: BSONDocument, channelID: BSONValue?, areaID: BSONValue?,
        place areaPlace: String, tally: inout RuleTally
    ) -> BSONDocument {
        let subjectID = normaliseID(subject["id"], place: "\(areaPlace) subject", tally: &tally)
        let place = "\(areaPlace)/\(subjectID?.legacyJSON ?? "(no id)")"
        let computedKey: String? =
            if let channel = channelID?.objectIDValue, let area = areaID?.objectIDValue,
                let subjectID = subjectID?.objectIDValue
            {
                Subject.topicKey(channelID: channel, areaID: area, subjectID: subjectID)
            } else {
                nil
            }
        var output: [(key: String, value: BSONValue)] = []
        for (key, value) in subject {
            switch key {
            case "id":
                output.append((key, subjectID ?? value))
            case "opt":
                output.append((key, normaliseOptions(value, place: place, tally: &tally)))
            case "topic_key":
                if let computedKey, value.stringValue != computedKey {
                    tally.record(.topicKeyMismatchKept, at: "\(place) topic_key \(value.legacyJSON)")
                }
                output.append((key, value))
            default:
                if !Self.subjectFields.contains(key) {
                    tally.recordUnknownField(
                        "areas.subjects.\(key)", rule: .cubeUnknownFieldsKept,
                        at: "\(place) \(key)")
                }
                output.append((key, value))
            }
        }
        if !subject.contains("access") {
            output.append(("access", []))
            tally.record(.accessAdded, at: place)
        }
        if !subject.contains("tags") {
            output.append(("tags", []))
            tally.record(.tagsAdded, at: place)
        }
        if !subject.contains("opt") {
            output.append(("opt", ["level": ""]))
            tally.record(.levelAdded, at: place)
            tally.record(.distributionMissing, at: place)
        }
        if !subject.contains("topic_key") {
            if let computedKey {
                output.append(("topic_key", .string(computedKey)))
                tally.record(.topicKeyComputed, at: place)
            } else {
                tally.record(.topicKeyNotComputable, at: place)
            }
        }
        return BSONDocument(output)
    }

    private func normaliseOptions(_ value: BSONValue, place: String, tally: inout RuleTally) -> BSONValue {
        guard case .document(var options) = value else {
            tally.record(.distributionUnknown, at: "\(place) opt \(value.legacyJSON)")
            return value
        }
        for key in options.keys where !Self.optionFields.contains(key) {
            tally.recordUnknownField(
                "areas.subjects.opt.\(key)", rule: .cubeUnknownFieldsKept,
                at: "\(place) opt.\(key)")
        }
        switch options["distribution"] {
        case nil:
            tally.record(.distributionMissing, at: place)
        case .string(let name) where Distribution(rawValue: name) != nil:
            break
        case let other?:
            tally.record(.distributionUnknown, at: "\(place) \(other.legacyJSON)")
        }
        if !options.contains("level") {
            options["level"] = ""
            tally.record(.levelAdded, at: place)
        }
        return .document(options)
    }

    /// An id as it should be stored: an ObjectId for 24 hex digits, anything else kept and counted.
    private func normaliseID(_ value: BSONValue?, place: String, tally: inout RuleTally) -> BSONValue? {
        switch value {
        case .objectID?:
            return value
        case .string(let hex)? where ObjectID(hex: hex) != nil:
            tally.record(.cubeIDFromHexString, at: "\(place) \(hex)")
            return ObjectID(hex: hex).map(BSONValue.objectID)
        case let other?:
            tally.record(.cubeIDNotObjectIDKept, at: "\(place) \(other.legacyJSON)")
            return other
        case nil:
            tally.record(.cubeIDNotObjectIDKept, at: "\(place) (missing)")
            return nil
        }
    }
}
