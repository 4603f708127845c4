/// The fields a client gives for a new or updated channel or area: they have the same three.
public struct CubeElementDraft: Sendable {
    public var name: String
    public var desc: String
    /// Replaces the access list when given; left alone when nil.
    public var access: [String]?
    /// `approval`: true marks it "required", false removes the mark; nil leaves it alone.
    public var approvalRequired: Bool?

    public init(name: String, desc: String, access: [String]? = nil, approvalRequired: Bool? = nil) {
        self.name = name
        self.desc = desc
        self.access = access
        self.approvalRequired = approvalRequired
    }
}

/// The fields of a new or updated channel.
public typealias ChannelDraft = CubeElementDraft

/// The fields of a new or updated area.
public typealias AreaDraft = CubeElementDraft

/// The fields a client gives for a new or updated subject.
public struct SubjectDraft: Sendable {
    public var name: String
    public var desc: String
    public var level: SubscriptionLevel
    public var distribution: Distribution
    /// Replaces the access list when given; left alone when nil.
    public var access: [String]?
    /// `approval`: true marks it "required", false removes the mark; nil leaves it alone.
    public var approvalRequired: Bool?

    public init(
        name: String, desc: String, level: SubscriptionLevel, distribution: Distribution,
        access: [String]? = nil, approvalRequired: Bool? = nil
    ) {
        self.approvalRequired = approvalRequired
        self.name = name
        self.desc = desc
        self.level = level
        self.distribution = distribution
        self.access = access
    }
}
