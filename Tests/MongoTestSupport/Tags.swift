import Testing

extension Tag {
    /// Suites that kill, stop or pause processes and check what follows, or load the database enough to disturb
    /// others (scripts/swift-tests.sh runs them apart, one at a time, after the others): tag a suite
    /// `@Suite(.tags(.faults))`, never a single test.
    @Tag public static var faults: Self
}
