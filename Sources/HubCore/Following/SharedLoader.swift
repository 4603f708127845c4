/// Runs loads one at a time; a caller that arrives before the next load has started shares it, and
/// a call returns only after a load that started after it was made (so it sees every earlier write).
actor SharedLoader {
    /// The most recently scheduled load.
    private var latest: Task<Void, any Error>?
    private var latestNumber = 0
    private var latestStarted = true

    func load(_ work: @escaping @Sendable () async throws -> Void) async throws {
        // A load that has not started yet reads the database after this call was made: share it.
        if let latest, !latestStarted { return try await latest.value }
        let previous = latest
        latestNumber += 1
        let number = latestNumber
        latestStarted = false
        let task = Task {
            _ = await previous?.result
            self.started(number)
            try await work()
        }
        latest = task
        try await task.value
    }

    private func started(_ number: Int) {
        if number == latestNumber { latestStarted = true }
    }
}
