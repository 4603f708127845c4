/// The rules of a message's `data`, the string values an app receives with it (a chat room id, a deep link): keys
/// the hub and FCM do not use themselves, and a size that leaves room for the message in FCM's 4 KB payload.
public enum MessageData {
    /// The most keys.
    public static let maximumKeys = 32
    /// The longest key, in bytes (`A-Z a-z 0-9 _ -`, so no `$` or `.` ever reaches the database).
    public static let maximumKeyLength = 64
    /// The most bytes of keys and values together (UTF-8).
    public static let maximumBytes = 1_024
    /// Keys the hub's own payload uses, or FCM reserves.
    public static let reservedKeys: Set<String> = [
        "msi_key", "topic_key", "dist", "title", "desc", "message", "timestamp", "truncated", "audience", "group",
        "urgency", "ack", "ack_responses", "from", "message_type", "collapse_key", "notification",
        "lang", "translations", "image", "kind", "dismissible", "display", "expires_at",
    ]

    /// Why `data` cannot be sent, or nil.
    public static func problem(_ data: [String: String]) -> String? {
        if data.count > maximumKeys { return "data: at most \(maximumKeys) keys" }
        for key in data.keys.sorted() {
            let allowed = key.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
            }
            guard (1...maximumKeyLength).contains(key.utf8.count), allowed else {
                return
                    "data: the key \"\(key.prefix(maximumKeyLength))\" must be 1 to \(maximumKeyLength) of A-Z a-z 0-9 _ -"
            }
            let lowered = key.lowercased()
            if reservedKeys.contains(key) || lowered.hasPrefix("google") || lowered.hasPrefix("gcm") {
                return "data: the key \"\(key)\" is reserved"
            }
        }
        let bytes = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        if bytes > maximumBytes { return "data: at most \(maximumBytes) bytes of keys and values" }
        return nil
    }
}
