import HubModel
import JSONText

/// A person's daily digest as one push: the messages held for it since the last one, said in one notification
/// ("5 new: Chess club 2, Library 3") with the list in the data, within FCM's 4 KB. Pure: the relay gives it the
/// messages, the mapping sends it as any message to a person's device (`relayMessage`).
///
/// The data is a message's (`msi_key` the digest's own id, `title`, `desc`, `message`, `timestamp`), with
/// `audience` "digest" (no message has it: an app tells a digest by it), `count` (every message held, exact),
/// `listed` (how many `items` holds) and `items`, a JSON array of `{"msi_key", "title", "from", "timestamp"}`, oldest
/// first, titles cut to `titleLength` characters, as many as the payload limit leaves room for
/// (`FCMMapping.digestRequest`); the app reads each message's full text by its catch-up as usual.
public struct FCMDigest: Sendable, Hashable {
    /// One message held for the digest.
    public struct Entry: Sendable, Hashable {
        public var msiKey: String
        public var title: String
        /// What it came through: the subject's or group's name.
        public var from: String
        public var timestamp: Int64

        public init(msiKey: String, title: String, from: String, timestamp: Int64) {
            (self.msiKey, self.title, self.from, self.timestamp) = (msiKey, title, from, timestamp)
        }
    }

    /// The digest's own id, 24 hex digits: its notification's tag.
    public var id: String
    /// Every message it holds, oldest first.
    public var entries: [Entry]
    /// When it is sent (Unix ms).
    public var timestamp: Int64

    public init(id: String, entries: [Entry], timestamp: Int64) {
        (self.id, self.entries, self.timestamp) = (id, entries, timestamp)
    }

    /// The longest title in `items`, in characters.
    public static let titleLength = 60
    /// The most sources the summary names; the others are "N more".
    public static let namedSources = 4

    /// "5 new: Chess club 2, Library 3": the exact count, then each source and its count, the most first (then in the
    /// order they first came), at most `namedSources` named.
    public var summary: String {
        var counts: [(from: String, count: Int)] = []
        for entry in entries {
            if let index = counts.firstIndex(where: { $0.from == entry.from }) {
                counts[index].count += 1
            } else {
                counts.append((entry.from, 1))
            }
        }
        let ordered = counts.enumerated().sorted { ($1.element.count, $0.offset) < ($0.element.count, $1.offset) }
            .map(\.element)
        var parts = ordered.prefix(Self.namedSources).map { "\(Self.cut($0.from, to: 30)) \($0.count)" }
        if ordered.count > Self.namedSources { parts.append("\(ordered.count - Self.namedSources) more") }
        return "\(entries.count) new: " + parts.joined(separator: ", ")
    }

    /// The notification's body: the first titles, cut to 120 characters.
    public var body: String {
        Self.cut(entries.map(\.title).joined(separator: " · "), to: 120)
    }

    /// `items` and how many entries it lists: the oldest first, while the array stays within `bytes`.
    public func items(within bytes: Int) -> (json: String, listed: Int) {
        var output: [UInt8] = [UInt8(ascii: "[")]
        var listed = 0
        for entry in entries {
            var item: [UInt8] = listed > 0 ? [UInt8(ascii: ",")] : []
            item.append(contentsOf: Array(#"{"msi_key":"#.utf8))
            JSONString.append(entry.msiKey, to: &item)
            item.append(contentsOf: Array(#","title":"#.utf8))
            JSONString.append(Self.cut(entry.title, to: Self.titleLength), to: &item)
            item.append(contentsOf: Array(#","from":"#.utf8))
            JSONString.append(Self.cut(entry.from, to: 40), to: &item)
            item.append(contentsOf: Array(#","timestamp":\#(entry.timestamp)}"#.utf8))
            guard output.count + item.count + 1 <= bytes else { break }
            output.append(contentsOf: item)
            listed += 1
        }
        output.append(UInt8(ascii: "]"))
        return (String(decoding: output, as: UTF8.self), listed)
    }

    /// The digest as a message to a person's device (`FCMMapping.deviceRequest` with `.digest`): an Alert whose
    /// title is the summary and pop-up the first titles, at the default urgency, with `count`, `listed` and `items`
    /// (within `itemsBytes`) in its data.
    func relayMessage(itemsBytes: Int) -> RelayMessage {
        let (json, listed) = items(within: itemsBytes)
        return RelayMessage(
            msiKey: id, topicKey: "", distribution: .alert, title: summary, desc: body, message: "",
            timestamp: timestamp,
            data: ["count": String(entries.count), "listed": String(listed), "items": json])
    }

    /// `text` cut to `length` characters, with "…" when cut.
    static func cut(_ text: String, to length: Int) -> String {
        text.count <= length ? text : String(text.prefix(length - 1)) + "…"
    }
}

extension FCMMapping {
    /// The one request of a person's daily digest to the device of `token` (`FCMDigest`): a device request with
    /// `audience` "digest", its `items` as many as `options.payloadLimit` leaves room for beside the rest, so FCM
    /// never gets it cut.
    public static func digestRequest(
        _ digest: FCMDigest, token: String, options: FCMMappingOptions = FCMMappingOptions(), language: String? = nil
    ) -> FCMRequest {
        func request(_ itemsBytes: Int) -> FCMRequest {
            deviceRequest(
                for: digest.relayMessage(itemsBytes: itemsBytes), token: token, audience: .digest, options: options,
                language: language)
        }
        // The room beside the rest, less each time the list (measured as FCM counts it, escaped) still overflows.
        var room = options.payloadLimit - request(2).payloadSize
        while room > 2 {
            let candidate = request(room)
            if !candidate.isTruncated && candidate.payloadSize <= options.payloadLimit { return candidate }
            room = room * 4 / 5
        }
        return request(2)
    }
}
