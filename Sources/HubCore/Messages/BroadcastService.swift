import DAO
import HubTime

/// The banners an app shows at launch (`GET /broadcasts/active`, `GET /device/:id/broadcasts`): the live downtime,
/// greeting and non-dismissible messages, so that a phone set up after one was sent still shows it while it lasts.
///
/// A banner is live from its send time until its `relay.expires_at` (the earlier of its `expires_at` and its `ttl`),
/// or, without either, for 28 days (FCM's default ttl); newest first. An anonymous app names its topics and sees
/// their banners' public fields; a device sees those of its subscriptions, its person and its person's groups, as its
/// catch-up does (`MessageVisibility.deviceView`). Samples are never listed, nor another person's messages.
public struct BroadcastService: Sendable {
    let messages: MessageDAO
    let devices: DeviceService
    let groups: GroupDAO
    let progress: RelayProgressDAO
    let now: UnixClock

    /// How many banners a list holds unless asked otherwise.
    public static let defaultLimit = 20
    /// The most banners a list holds.
    public static let maximumLimit = 50
    /// The most topics an anonymous list names.
    public static let maximumTopics = 100
    /// How far back a live banner may have been stored: the furthest expiry the send rules allow ahead of the
    /// submission (a schedule and a ttl included), and the life of a banner without one after its send time.
    static let longestLifeMS = MessageService.Submission.maximumExpiryMS + MessageDAO.bannerLifetimeWithoutExpiryMS

    /// The live banners of `topicKeys`, newest first, as anyone sees them (`MessageVisibility.view(_:for:now:)`).
    /// - Throws: `DAOError`.
    public func active(topicKeys: [String], limit: Int = defaultLimit) async throws -> [Message] {
        let now = self.now()
        let banners = try await messages.activeBanners(
            BannerQuery(
                topicKeys: topicKeys, now: now, storedSince: now - Self.longestLifeMS, limit: Self.clamp(limit)))
        return try await progress.resolved(banners).compactMap { MessageVisibility.view($0, for: .anonymous, now: now) }
    }

    /// The live banners `device` shows, newest first: those of its subscriptions, of its person and of its person's
    /// groups, each as the device sees it in its catch-up (`MessageVisibility.deviceView`).
    /// - Throws: `DAOError`.
    public func active(for device: Device, limit: Int = defaultLimit) async throws -> [Message] {
        let topics = try await devices.topicKeys(of: device)
        var personGroups: [String] = []
        if let person = device.person { personGroups = try await groups.groups(of: person) }
        let now = self.now()
        let banners = try await messages.activeBanners(
            BannerQuery(
                topicKeys: topics, person: device.person, groups: personGroups, now: now,
                storedSince: now - Self.longestLifeMS, limit: Self.clamp(limit)))
        return try await progress.resolved(banners).compactMap {
            MessageVisibility.deviceView($0, person: device.person, groups: personGroups, now: now)
        }
    }

    /// `limit` within 1...`maximumLimit`.
    static func clamp(_ limit: Int) -> Int { min(max(limit, 1), maximumLimit) }
}

extension HubServices {
    /// The banners an app shows at launch, over the services' database and clock.
    public var broadcasts: BroadcastService {
        BroadcastService(
            messages: devices.messages, devices: devices, groups: devices.groups, progress: relayProgress,
            now: now)
    }
}
