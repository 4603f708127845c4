import Foundation

/// The checks FCM HTTP v1 makes on a `messages:send` body, as far as the relay's requests can trip them.
enum FCMValidation {
    struct Problem: Error {
        var message: String
    }

    static let messageFields: Set = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]

    /// Whether the body is one FCM accepts; on success, whether it asked for `validate_only`.
    static func validate(body: [UInt8], payloadLimit: Int) -> Result<Bool, Problem> {
        do {
            return .success(try check(body: body, payloadLimit: payloadLimit))
        } catch let problem as Problem {
            return .failure(problem)
        } catch {
            return .failure(Problem(message: "Invalid JSON payload received."))
        }
    }

    private static func check(body: [UInt8], payloadLimit: Int) throws -> Bool {
        guard let root = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw Problem(message: "Invalid JSON payload received. Expected an object.")
        }
        for key in root.keys where key != "message" && key != "validate_only" {
            throw Problem(message: "Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.")
        }
        var validateOnly = false
        if let flag = root["validate_only"] {
            guard let flag = flag as? Bool else {
                throw Problem(message: "Invalid value at 'validate_only' (TYPE_BOOL)")
            }
            validateOnly = flag
        }
        guard let message = root["message"] as? [String: Any] else {
            throw Problem(message: "Invalid JSON payload received. 'message' is required.")
        }
        for key in message.keys where !messageFields.contains(key) {
            throw Problem(
                message: "Invalid JSON payload received. Unknown name \"\(key)\" at 'message': Cannot find field.")
        }
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1 else {
            throw Problem(message: "Exactly one of message.token, message.topic or message.condition must be set.")
        }
        if let topic = message["topic"] {
            guard let topic = topic as? String, isTopicName(topic) else {
                throw Problem(message: "Invalid topic name: must match [a-zA-Z0-9-_.~%]{1,900}.")
            }
        }
        if let condition = message["condition"] {
            guard let condition = condition as? String else {
                throw Problem(message: "Invalid value at 'message.condition' (TYPE_STRING)")
            }
            if case .failure(let problem) = FakeFCMCondition.parse(condition) {
                throw Problem(message: problem.message)
            }
        }
        var payloadBytes = 0
        if let data = message["data"] {
            guard let data = data as? [String: Any] else {
                throw Problem(message: "Invalid value at 'message.data' (type.googleapis.com/google.protobuf.Struct)")
            }
            for (key, value) in data {
                guard let value = value as? String else {
                    throw Problem(message: "Invalid value at 'message.data[\(key)].value' (TYPE_STRING)")
                }
                payloadBytes += key.utf8.count + value.utf8.count
            }
        }
        let notification = message["notification"] as? [String: Any]
        if message["notification"] != nil {
            guard let notification else { throw Problem(message: "Invalid value at 'message.notification'") }
            for key in ["title", "body"] {
                if let value = notification[key] {
                    guard let text = value as? String else {
                        throw Problem(message: "Invalid value at 'message.notification.\(key)' (TYPE_STRING)")
                    }
                    payloadBytes += text.utf8.count
                }
            }
        }
        if let android = message["android"] {
            try checkAndroid(android)
        }
        if let apns = message["apns"] {
            try checkAPNS(apns, dataOnly: notification == nil)
        }
        guard payloadBytes <= payloadLimit else {
            throw Problem(
                message: "Message is too big: \(payloadBytes) bytes of payload, the limit is \(payloadLimit).")
        }
        return validateOnly
    }

    private static func checkAndroid(_ value: Any) throws {
        guard let android = value as? [String: Any] else {
            throw Problem(message: "Invalid value at 'message.android'")
        }
        if let priority = android["priority"] {
            guard let priority = priority as? String, ["NORMAL", "HIGH"].contains(priority) else {
                throw Problem(message: "Invalid value at 'message.android.priority'")
            }
        }
        if let ttl = android["ttl"] {
            guard let ttl = ttl as? String, isDuration(ttl) else {
                throw Problem(
                    message: "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)")
            }
        }
    }

    /// APNs headers are strings; a background (data-only) push must have apns-priority 5, as Apple requires.
    private static func checkAPNS(_ value: Any, dataOnly: Bool) throws {
        guard let apns = value as? [String: Any] else { throw Problem(message: "Invalid value at 'message.apns'") }
        let headers = apns["headers"] as? [String: Any] ?? [:]
        for (key, value) in headers where !(value is String) {
            throw Problem(message: "Invalid value at 'message.apns.headers[\(key)].value' (TYPE_STRING)")
        }
        let background = headers["apns-push-type"] as? String == "background"
        if background || dataOnly, let priority = headers["apns-priority"] as? String, priority != "5" {
            throw Problem(message: "Invalid APNs priority for a background notification: must be 5.")
        }
        if background, headers["apns-priority"] == nil {
            throw Problem(message: "Invalid APNs priority for a background notification: must be 5.")
        }
        if let expiration = headers["apns-expiration"] as? String, Int64(expiration) == nil {
            throw Problem(message: "Invalid apns-expiration: must be a UNIX epoch date in seconds.")
        }
    }

    /// FCM's topic names: `[a-zA-Z0-9-_.~%]{1,900}`.
    static func isTopicName(_ topic: String) -> Bool {
        (1...900).contains(topic.utf8.count)
            && topic.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default:
                    "-_.~%".utf8.contains(byte)
                }
            }
    }

    /// A protobuf Duration in JSON: seconds with up to nine decimals and an "s".
    private static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s") else { return false }
        let number = text.dropLast().split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(number.count), !number[0].isEmpty, number[0].allSatisfy(\.isASCIIDigitCharacter)
        else { return false }
        return number.count == 1 || ((1...9).contains(number[1].count) && number[1].allSatisfy(\.isASCIIDigitCharacter))
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool {
        isASCII && isNumber
    }
}
