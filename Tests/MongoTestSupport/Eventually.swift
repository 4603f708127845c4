import Testing

/// Waits until `condition` holds, asking every 50 ms; fails the test (naming `what`) and throws when it does not
/// within `within`. The limit only ends a wait that would never end: a test waits for a state, not for a time.
public func eventually(_ what: String = "the condition holds", within: Duration = .seconds(10),
                       sourceLocation: SourceLocation = #_sourceLocation,
                       _ condition: () async throws -> Bool) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + within
    while clock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    if try await condition() { return }
    Issue.record("not within \(within): \(what)", sourceLocation: sourceLocation)
    throw CancellationError()
}
