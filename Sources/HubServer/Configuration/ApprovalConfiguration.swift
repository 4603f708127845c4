import HubCore

extension HubConfiguration {
    /// The approval rules the environment gives, stored on the first start only (`ApprovalRules`; an admin changes
    /// them in the portal after): `APPROVAL_GROUP_SIZE` (members, default 500), `APPROVAL_TIMEOUT` (seconds, or a
    /// number with s, m or h such as `90m` or `1h`; default 1 h, at most 7 days) and `APPROVAL_DEFAULTS` (off by
    /// default: only channels, areas and subjects marked `"approval": "required"` hold; on: the default rules too).
    /// - Throws: `ConfigurationError` naming a variable whose value cannot be used.
    static func approvalPolicy(_ environment: [String: String]) throws -> ApprovalPolicy {
        var policy = ApprovalPolicy()
        let sizes = Int(ApprovalPolicy.groupSizes.lowerBound)...Int(ApprovalPolicy.groupSizes.upperBound)
        if let size = try environment.number("APPROVAL_GROUP_SIZE", in: sizes) { policy.groupSize = Int64(size) }
        if let text = environment["APPROVAL_TIMEOUT"], !text.isEmpty {
            guard let seconds = Self.durationSeconds(text), ApprovalPolicy.timeoutSeconds.contains(Int64(seconds))
            else {
                throw ConfigurationError(
                    "APPROVAL_TIMEOUT must be seconds or a duration such as 90m or 1h, from 1 minute to 7 days, not \"\(text)\""
                )
            }
            policy.timeout = .seconds(seconds)
        }
        switch environment["APPROVAL_DEFAULTS"]?.lowercased() {
        case nil, "", "off": break
        case "on": policy.defaults = true
        default: throw ConfigurationError("APPROVAL_DEFAULTS must be on or off")
        }
        return policy
    }

    /// Seconds in `text`: a whole number of seconds, or one followed by s, m or h; nil otherwise.
    static func durationSeconds(_ text: String) -> Int? {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
        if let last = text.last, let unit = units[last] {
            return Int(text.dropLast()).flatMap { $0 >= 0 ? $0 * unit : nil }
        }
        return Int(text).flatMap { $0 >= 0 ? $0 : nil }
    }
}
