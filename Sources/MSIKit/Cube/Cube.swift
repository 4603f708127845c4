import Foundation

/// The information cube: every channel with its areas and subjects, as `GET /channel` gives it.
public struct Cube: Sendable, Hashable {
    /// The channels, in the hub's order.
    public var channels: [Channel]

    /// Creates a cube from its channels.
    public init(channels: [Channel]) {
        self.channels = channels
    }

    /// Decodes the JSON array that `GET /channel` answers.
    /// - Throws: `MSIKitError` `.invalidResponse` when it is not that array.
    public init(json: Data) throws(MSIKitError) {
        channels = try HubConnection.decode([Channel].self, from: json)
    }

    /// Every subject of every area of every channel, in the cube's order.
    public var subjects: [Subject] {
        channels.flatMap { $0.areas.flatMap(\.subjects) }
    }

    /// The subject with this topic key, if the cube has one.
    public func subject(topicKey: String) -> Subject? {
        for channel in channels {
            for area in channel.areas {
                if let subject = area.subjects.first(where: { $0.topicKey == topicKey }) { return subject }
            }
        }
        return nil
    }

    /// The subjects marked with whether the device is subscribed to each (mergeSubData).
    public static func mergeSubData(_ subjects: [Subject], subscribed: some Sequence<String>) -> [MergedSubject] {
        let subscribed = Set(subscribed)
        return subjects.map { MergedSubject(subject: $0, subscribed: subscribed.contains($0.topicKey)) }
    }

    /// Only the subjects the device is subscribed to, each marked subscribed (mergeMySubData).
    public static func mergeMySubData(_ subjects: [Subject], subscribed: some Sequence<String>) -> [MergedSubject] {
        mergeSubData(subjects, subscribed: subscribed).filter(\.subscribed)
    }

    /// The names and level of the topic's channel, area and subject, and whether it is subscribed
    /// (getSubscriptionInfo).
    ///
    /// Each part of the topic key is looked up by its id, so a subject removed from a channel that still exists
    /// keeps its channel's and area's names; what cannot be found gets `SubscriptionInfo`'s placeholders.
    public func subscriptionInfo(topicKey: String, subscribed: some Sequence<String>) -> SubscriptionInfo {
        let ids = topicKey.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        let channel = ids.count == 3 ? channels.first { $0.id == ids[0] } : nil
        let area = channel?.areas.first { $0.id == ids[1] }
        let subject = area?.subjects.first { $0.id == ids[2] && $0.topicKey == topicKey }
        return SubscriptionInfo(
            topicKey: topicKey,
            channelName: channel?.name ?? SubscriptionInfo.unknownChannelName,
            areaName: area?.name ?? SubscriptionInfo.unknownAreaName,
            subjectName: subject?.name ?? SubscriptionInfo.unknownSubjectName,
            level: subject?.level ?? .optIn,
            subscribed: subscribed.contains(topicKey),
            isKnown: subject != nil
        )
    }
}
