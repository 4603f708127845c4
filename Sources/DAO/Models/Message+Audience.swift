/// Whom a message is for, which decides how it is sent: to its FCM topic, or device by device.
public enum MessageAudience: Sendable, Hashable {
    /// The devices that want its subject (`topic_key`): sent to the FCM topic.
    case topic
    /// A sample of its topic's devices (`sample`, `cohort`): sent device by device to those picked.
    case sample
    /// The persons and groups of its `to`: sent device by device to their devices.
    case persons
}

extension Message {
    /// Whom the message is for (`to`, else `sample`, else its topic): the one test every sender and reader uses.
    public var audience: MessageAudience {
        if recipients != nil { return .persons }
        return broadcast.sample != nil ? .sample : .topic
    }
}
