import Foundation

/// Reads the banners to show at launch: a registered device's own (`GET /device/:id/broadcasts`, its subscriptions,
/// person and groups), else those of an app's topics (`GET /broadcasts/active?topic_key=`, no credentials).
struct ActiveBroadcasts: Sendable {
    let hub: HubConnection
    let registration: DeviceRegistration
    let cube: CubeCache
    /// The device's locale, whose language each banner is shown in when it has it.
    let locale: String?

    /// The most topics the anonymous list names.
    static let maximumTopics = 100

    /// The live banners, newest first, at most `limit` (1 to 50).
    /// - Parameter topicKeys: the topics of an app not registered; nil: the cube's Forced and Recommended subjects.
    func run(topicKeys: [String]?, limit: Int) async throws(MSIKitError) -> [Banner] {
        guard (1...50).contains(limit) else {
            throw MSIKitError(.invalidArgument, "The limit must be from 1 to 50.")
        }
        let query = [URLQueryItem(name: "limit", value: String(limit))]
        let answer: Answer
        if try await registration.state() != .notRegistered {
            answer = try await registration.authorized { [hub] (id, secret) throws(MSIKitError) in
                try await hub.json(
                    "GET", ["device", id, "broadcasts"], query: query, headers: HubConnection.bearer(secret))
            }
        } else {
            var topics = topicKeys
            if topics == nil {
                topics = try await cube.cube(refresh: false).subjects.filter(\.level.isAutomatic).map(\.topicKey)
            }
            let names = Array((topics ?? []).filter { !$0.isEmpty }.prefix(Self.maximumTopics))
            guard !names.isEmpty else { return [] }
            answer = try await hub.json(
                "GET", ["broadcasts", "active"],
                query: [URLQueryItem(name: "topic_key", value: names.joined(separator: ","))] + query)
        }
        return answer.broadcasts.filter(\.display).map { Banner(message: $0.stored.localized(to: locale)) }
    }

    /// `{"broadcasts": [message...]}`.
    private struct Answer: Decodable, Sendable {
        var broadcasts: [HubMessage]
    }
}
