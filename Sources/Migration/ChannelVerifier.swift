import Mongo

/// Checks that GET /channel on the target gives the legacy hub's output for every channel.
///
/// GET /channel serves each `icube` document as stored, written by `LegacyJSONWriter`. The legacy
/// hub served the same documents through `JSON.stringify`, which the writer imitates. So both sides
/// are written as legacy JSON and read back as plain JSON (a date is its ISO string, a decimal the
/// `{"$numberDecimal": …}` object, binary its base64, as a client reads them), and compared: every key
/// and value of the legacy output must be in the target's (an ObjectId and the hex string it came from
/// read the same), and the target may add only what the rules add (`[]` arrays, `opt.level` "", a
/// computed `topic_key`).
/// The targets may be stored documents or GET /channel's JSON read back: ids compare by their hex.
struct ChannelVerifier {
    private static let addedArrays: Set = ["access", "tags", "areas", "subjects"]

    /// Compares the `sources` (legacy documents as read) with `targets` (the target's, or in a dry run
    /// the documents that would be written).
    func verify(sources: [BSONDocument], targets: [BSONDocument]) -> ChannelVerification {
        var result = ChannelVerification()
        var byID = [String: BSONDocument]()
        for target in targets {
            byID[key(target["_id"] ?? .null)] = target
        }
        var sourceKeys = Set<String>()
        for source in sources {
            result.checked += 1
            let legacy = Self.legacyContent(source)
            let id = legacy["_id"] ?? .null
            let channelKey = key(id)
            sourceKeys.insert(channelKey)
            guard let target = byID[channelKey] else {
                result.missing.append(id.legacyJSON)
                continue
            }
            if let path = difference(.document(legacy), .document(Self.legacyContent(target)), path: "") {
                result.mismatches.append("\(id.legacyJSON) at \(path.isEmpty ? "the top" : path)")
            } else {
                result.matching += 1
            }
        }
        result.extra = byID.keys.filter { !sourceKeys.contains($0) }.count
        return result
    }

    /// A channel's `_id` as GET /channel shows it once normalised: an ObjectId and the hex string it
    /// came from (in either case) are one key.
    private func key(_ id: BSONValue) -> String {
        switch id {
        case .objectID(let objectID): objectID.hex
        case .string(let hex) where ObjectID(hex: hex) != nil: hex.lowercased()
        default: id.legacyJSON
        }
    }

    /// The document as its legacy JSON reads: written by `LegacyJSONWriter` and parsed back as plain
    /// JSON, keys as they are ("$numberDecimal", "$id", "a.b"), no Extended JSON read into them.
    static func legacyContent(_ document: BSONDocument) -> BSONDocument {
        let json = LegacyJSONWriter().bytes(document)
        // The writer's output of a document is a JSON object; only nesting deeper than BSON's own
        // limit could fail to parse, and then the stored document is compared as it is.
        return (try? reader.document(from: json)) ?? document
    }

    private static let reader = JSONParser(maximumDepth: 200, refusesOperatorKeys: false)

    /// The first path where `target` lacks or changes something of `legacy`, or adds something
    /// the normalisation does not add; nil when the content is the same.
    private func difference(_ legacy: BSONValue, _ target: BSONValue, path: String) -> String? {
        switch (legacy, target) {
        case (.document(let legacy), .document(let target)):
            for (key, value) in legacy {
                let child = path.isEmpty ? key : "\(path).\(key)"
                guard let other = target[key] else { return child }
                if let difference = difference(value, other, path: child) { return difference }
            }
            for (key, value) in target where !legacy.contains(key) && !isAddition(key, value) {
                return path.isEmpty ? key : "\(path).\(key)"
            }
            return nil
        case (.array(let legacy), .array(let target)):
            guard legacy.count == target.count else { return path }
            for (index, pair) in zip(legacy, target).enumerated() {
                if let difference = difference(pair.0, pair.1, path: "\(path).\(index)") { return difference }
            }
            return nil
        case (.string(let legacy), .string(let target)) where ObjectID(hex: legacy) != nil:
            // A 24-hex string id became an ObjectId, which GET /channel writes in lowercase; a string
            // that only looks like one (base64 can) is kept as it was.
            return legacy == target || legacy.lowercased() == target ? nil : path
        default:
            return legacy == target ? nil : path
        }
    }

    /// Whether a key the target has and the legacy output lacks is one the rules add.
    private func isAddition(_ key: String, _ value: BSONValue) -> Bool {
        switch key {
        case _ where Self.addedArrays.contains(key): value.arrayValue?.isEmpty == true
        case "level": value.stringValue == ""
        case "opt": value.documentValue.map { $0.keys == ["level"] && $0["level"]?.stringValue == "" } ?? false
        case "topic_key": value.stringValue != nil
        default: false
        }
    }
}
