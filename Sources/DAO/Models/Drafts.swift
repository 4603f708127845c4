/// The fields a client gives for a new or updated channel.
public struct ChannelDraft: Sendable {
    public var name: String
    public var desc: String
    /// Replaces the access list when given; left alone when nil.
    public var access: [String]?

    public init(name: String, desc: String, access: [String]? = nil) {
        self.name = name
        self.desc = desc
        self.access = access
    }
}

/// The fields a client gives for a new or updated area.
public struct AreaDraft: Sendable {
    public var name: String
    public var desc: String
    /// Replaces the access list when given; left alone when nil.
    public var access: [String]?

    public init(name: String, desc: String, access: [String]? = nil) {
        self.name = name
        self.desc = desc
        self.access = access
    }
}

/// The fields a client gives for a new or updated subject.
public struct SubjectDraft: Sendable {
    public var name: String
    public var desc: String
    public var level: SubscriptionLevel
    public var distribution: Distribution
    /// Replaces the access list when given; left alone when nil.
    public var access: [String]?

    public init(name: String, desc: String, level: SubscriptionLevel, distribution: Distribution,
                access: [String]? = nil) {
        self.name = name
        self.desc = desc
        self.level = level
        self.distribution = distribution
        self.access = access
    }
}
