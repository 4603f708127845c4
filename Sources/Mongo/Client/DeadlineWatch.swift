import Synchronization

/// Runs actions at their deadlines for many callers through one sleeping task.
///
/// A timer per call (`Task.sleep` in a task of its own) arms and cancels a dispatch timer, and wakes the
/// dispatch manager thread, for every database write with a deadline: two per POST, which with their tasks cost
/// about a quarter of the hub's CPU per message (this watch won back about 60 % of that). Here a call's deadline is an entry in a list sorted by time (deadlines come in
/// nearly in order, so an entry is almost always appended), and the one task sleeps until the earliest entry
/// still scheduled. Cancelling an entry only forgets its action: the task does not wake for it, and skips it
/// when it wakes for a later one, so a write that ends well before its deadline costs no timer at all.
public final class DeadlineWatch: Sendable {
    /// The watch every `withDeadline` and `InsertBatcher` shares.
    public static let shared = DeadlineWatch()

    /// Names a scheduled action, to cancel it.
    public struct Entry: Sendable {
        fileprivate let id: Int
    }

    private struct State {
        /// The actions still scheduled, by entry.
        var actions: [Int: @Sendable () -> Void] = [:]
        /// Every entry not yet passed, sorted by deadline from `head` on (cancelled ones included until passed).
        var order: [(at: ContinuousClock.Instant, id: Int)] = []
        var head = 0
        var nextID = 0
        /// When the sleeping task wakes; nil when none sleeps.
        var target: ContinuousClock.Instant?
        /// The sleeping task's number: a task whose number is not this one stops (it was replaced).
        var generation = 0
        var sleeper: Task<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// Calls `action` at `deadline` unless `cancel` comes first; `action` runs on the watch's task and must not
    /// block.
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> Entry {
        let (id, generation) = state.withLock { state -> (Int, Int?) in
            let id = state.nextID
            state.nextID += 1
            state.actions[id] = action
            var index = state.order.endIndex
            while index > state.head, state.order[index - 1].at > deadline { index -= 1 }
            state.order.insert((deadline, id), at: index)
            if let target = state.target, target <= deadline { return (id, nil) }
            // Nothing sleeps, or it sleeps past this deadline: a new sleeper replaces it.
            state.target = deadline
            state.generation += 1
            state.sleeper?.cancel()
            state.sleeper = nil
            return (id, state.generation)
        }
        if let generation {
            let sleeper = Task { await self.sleep(generation: generation) }
            state.withLock { state in
                if state.generation == generation { state.sleeper = sleeper } else { sleeper.cancel() }
            }
        }
        return Entry(id: id)
    }

    /// Forgets the action of `entry` if it has not run.
    public func cancel(_ entry: Entry) {
        _ = state.withLock { $0.actions.removeValue(forKey: entry.id) }
    }

    /// Runs what is due, then sleeps until the earliest entry still scheduled; ends when none is left or a newer
    /// sleeper took over.
    private func sleep(generation: Int) async {
        while !Task.isCancelled {
            let (due, wake) = state.withLock { state -> ([@Sendable () -> Void], ContinuousClock.Instant?) in
                guard state.generation == generation else { return ([], nil) }
                let now = ContinuousClock.now
                var due: [@Sendable () -> Void] = []
                while state.head < state.order.count,
                    state.order[state.head].at <= now || state.actions[state.order[state.head].id] == nil
                {
                    if let action = state.actions.removeValue(forKey: state.order[state.head].id) { due.append(action) }
                    state.head += 1
                }
                if state.head > 1_024, state.head * 2 > state.order.count {
                    state.order.removeFirst(state.head)
                    state.head = 0
                }
                guard state.head < state.order.count else {
                    state.target = nil
                    state.sleeper = nil
                    return (due, nil)
                }
                state.target = state.order[state.head].at
                return (due, state.target)
            }
            for action in due { action() }
            guard let wake else { return }
            try? await Task.sleep(until: wake, clock: .continuous)
        }
    }
}
