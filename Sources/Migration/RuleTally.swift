/// How often each normalisation rule applied, with a few examples of each for the report.
public struct RuleTally: Sendable, Equatable {
    /// How many examples of each rule the report keeps.
    public static let examplesPerRule = 5

    /// Each rule's count; rules that never applied are absent (read them through `count(_:)`).
    public private(set) var counts: [NormalisationRule: Int] = [:]
    /// Up to `examplesPerRule` places where each rule applied (an id and a path, never contents).
    public private(set) var examples: [NormalisationRule: [String]] = [:]
    /// How often each unknown field (a dotted path such as `areas.subjects.icon`) was found.
    public private(set) var unknownFields: [String: Int] = [:]

    /// An empty tally.
    public init() {}

    /// The count of `rule`, 0 when it never applied.
    public func count(_ rule: NormalisationRule) -> Int { counts[rule] ?? 0 }

    /// Records that `rule` applied at `place`.
    mutating func record(_ rule: NormalisationRule, at place: @autoclosure () -> String) {
        counts[rule, default: 0] += 1
        if (examples[rule]?.count ?? 0) < Self.examplesPerRule {
            examples[rule, default: []].append(place())
        }
    }

    /// Records an unknown field at `path`, kept under `rule`.
    mutating func recordUnknownField(_ path: String, rule: NormalisationRule, at place: @autoclosure () -> String) {
        unknownFields[path, default: 0] += 1
        record(rule, at: place())
    }

    /// Adds another tally's counts and examples to this one.
    mutating func merge(_ other: RuleTally) {
        for (rule, count) in other.counts { counts[rule, default: 0] += count }
        for (rule, places) in other.examples {
            let room = Self.examplesPerRule - (examples[rule]?.count ?? 0)
            if room > 0 { examples[rule, default: []].append(contentsOf: places.prefix(room)) }
        }
        for (path, count) in other.unknownFields { unknownFields[path, default: 0] += count }
    }
}
