import DAO
import Mongo

/// What the relay's per-device fan-out reads and writes beside the outbox: the deliveries, the devices and groups
/// its recipients resolve through, a topic's subscriptions (for a sample), and the send rate every replica shares.
public struct FanOutStores: Sendable {
    /// One document per message and device reached.
    public let deliveries: DeliveryDAO
    /// The devices bound to the persons reached.
    public let devices: DeviceDAO
    /// The groups' members.
    public let groups: GroupDAO
    /// The shared counter `FCM_SEND_RATE` is taken from.
    public let rates: RateWindowDAO
    /// A topic's registered devices, of which a sample is picked.
    public let subscriptions: SubscriptionDAO
    /// The groups persons muted: their devices get the group's messages in the background.
    public let mutes: PersonMuteDAO
    /// The persons' delivery choices: a group a person turned `off` reaches their devices in the background, as a mute.
    public let settings: PersonSettingsDAO
    /// Each person's unread messages, counted as the fan-out reaches them (the badge of each send); nil when they
    /// are not counted (`UNREAD_COUNTS` off).
    public let unread: PersonUnreadDAO?
    /// The clock mutes are read by (Unix ms).
    public let now: UnixClock

    public init(
        deliveries: DeliveryDAO, devices: DeviceDAO, groups: GroupDAO, rates: RateWindowDAO,
        subscriptions: SubscriptionDAO, mutes: PersonMuteDAO, settings: PersonSettingsDAO, unread: PersonUnreadDAO?,
        now: @escaping UnixClock
    ) {
        self.mutes = mutes
        self.settings = settings
        self.unread = unread
        self.now = now
        self.subscriptions = subscriptions
        self.deliveries = deliveries
        self.devices = devices
        self.groups = groups
        self.rates = rates
    }

    /// The stores of `database`, on the clock `now`.
    public init(database: MongoDatabase, countsUnread: Bool = false, now: @escaping UnixClock) {
        self.init(
            deliveries: DeliveryDAO(database: database, now: now),
            devices: DeviceDAO(database: database, now: now),
            groups: GroupDAO(database: database, now: now), rates: RateWindowDAO(database: database, now: now),
            subscriptions: SubscriptionDAO(database: database, now: now), mutes: PersonMuteDAO(database: database),
            settings: PersonSettingsDAO(database: database, now: now),
            unread: countsUnread ? PersonUnreadDAO(database: database) : nil, now: now)
    }
}
