import Testing

/// Waits until `condition` holds, asking at once, then every 25 ms growing to every 250 ms (many tests wait at once on
/// one shared test database: asking less often leaves it to the work they wait for); fails the test (naming `what`)
/// and throws when it does not within `within`. The limit only ends a wait that would never end: a test waits for a
/// state, not for a time, so it is far above what a loaded two-core machine takes.
public func eventually(
    _ what: String = "the condition holds", within: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + within
    var pause: Duration = .milliseconds(25)
    while clock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: pause)
        pause = min(pause * 2, .milliseconds(250))
    }
    if try await condition() { return }
    Issue.record("not within \(within): \(what)", sourceLocation: sourceLocation)
    throw CancellationError()
}
