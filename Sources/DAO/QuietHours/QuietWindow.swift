import HubTime
import Mongo

/// One distinct quiet-hours window among the devices (`quiet_windows`): its server-owned FCM topic, the window,
/// and how many devices have it. The windows are few (schools share a time zone and a bedtime), so the relay reads
/// them all before a topic message to know which are quiet now.
public struct QuietWindow: Sendable, Hashable {
    /// `quiet-<12 hex digits>`: the topic every device with this window is subscribed to (the document's `_id`).
    public var topic: String
    public var quietHours: QuietHours
    /// How many devices have the window now (kept by `$inc` as devices set and clear it).
    public var devices: Int

    public init(topic: String, quietHours: QuietHours, devices: Int) {
        self.topic = topic
        self.quietHours = quietHours
        self.devices = devices
    }

    /// Reads a stored window; nil when the document is not one.
    init?(document: BSONDocument) {
        guard let topic = document["_id"]?.stringValue,
            case .success(let hours) = QuietHours.parse(
                from: document.string("from"), to: document.string("to"),
                tz: document.string("tz"))
        else { return nil }
        self.init(topic: topic, quietHours: hours, devices: Int(document["devices"]?.int64Value ?? 0))
    }
}
