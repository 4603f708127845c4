/// What the app tells the hub of a message it received: the hub's reach report counts these.
public enum ReceiptEvent: String, Sendable, Hashable, CaseIterable {
    /// The message reached the device (sent by MSIKit itself when it stores a new message).
    case received
    /// The person opened the message in the app (`MSIClient.opened(msiKey:)`).
    case opened
    /// The person confirmed they have seen it, perhaps with a response (`MSIClient.acknowledge(msiKey:response:)`).
    case acknowledged
    /// The person read the message (`MSIClient.markRead(msiKey:)`): it leaves their unread on every device.
    case read
}
