/// The outcome of comparing GET /channel's content on the target with the legacy hub's, channel by channel.
public struct ChannelVerification: Sendable, Equatable {
    /// Channels of the source that were compared.
    public var checked = 0
    /// Channels whose target output holds the legacy output's content (plus the normalisations' additions).
    public var matching = 0
    /// Channels whose output differs: the channel's `_id` and the first path that differs.
    public var mismatches: [String] = []
    /// Channels of the source that the target does not hold.
    public var missing: [String] = []
    /// Channels of the target that the source does not hold (msi-hub's own; not a failure).
    public var extra = 0

    /// Nothing compared yet.
    public init() {}

    /// True when every source channel is on the target with the legacy content.
    public var passed: Bool { mismatches.isEmpty && missing.isEmpty }
}
