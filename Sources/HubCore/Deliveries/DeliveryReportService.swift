import DAO
import Mongo

/// A message's deliveries as its sender and admins see them: counts by outcome and platform, and a page of devices
/// with their outcome (never a registration token).
public struct DeliveryReport: Sendable {
    /// Every delivery counted by state, overall and per platform.
    public var counts: DeliveryCounts
    /// A page of deliveries in device order.
    public var deliveries: [Delivery]
    /// The cursor of the next page (the last device's id), or nil at the end.
    public var next: String?
}

/// Reads the delivery report of a message to persons and groups, for whom `MessageVisibility` shows the message's
/// detail (its sender, admins); anyone else is told there is no such message, as for the message itself.
public struct DeliveryReportService: Sendable {
    /// The most deliveries one page holds.
    public static let maximumLimit = 500
    /// The deliveries a page holds when the caller names no limit.
    public static let defaultLimit = 100

    let messages: MessageDAO
    let deliveries: DeliveryDAO

    public init(database: MongoDatabase) {
        self.messages = MessageDAO(database: database)
        self.deliveries = DeliveryDAO(database: database)
    }

    /// The report of the message `msiKey` for `viewer`: counts, and up to `limit` deliveries after the device
    /// `cursor` (a device id, as `DeliveryReport.next` gives it).
    /// - Throws: `DAOError` `.messageNotFound` when there is no such message or `viewer` may not see its detail.
    public func report(msiKey: ObjectID, for viewer: MessageViewer, cursor: ObjectID?, limit: Int) async throws
        -> DeliveryReport
    {
        let message = try await messages.get(msiKey: msiKey)
        guard MessageVisibility.seesDetail(of: message, viewer) else {
            throw DAOError(.messageNotFound, "no message has the msi_key \(msiKey.hex)")
        }
        let limit = min(max(limit, 1), Self.maximumLimit)
        var counts = try await deliveries.counts(of: message.id)
        // A device is stored once answered: once the message is resolved, those not answered yet are the rest of its
        // devices (counted overall; per platform only the pending answers are known).
        if let devices = message.document[path: "relay.components.devices.devices"]?.int64Value {
            let answered = counts.total - (counts.byState[.pending] ?? 0)
            counts.byState[.pending] = max(devices - answered, counts.byState[.pending] ?? 0)
        }
        // One more than asked says whether a next page exists.
        var page = try await deliveries.page(
            of: message.id,
            after: cursor.map { Delivery.id(message: message.id, device: $0) },
            limit: limit + 1)
        let more = page.count > limit
        if more { page.removeLast(page.count - limit) }
        return DeliveryReport(counts: counts, deliveries: page, next: more ? page.last?.device.hex : nil)
    }
}
