import Synchronization

/// The name of the progress record a worker's new messages go under: a new one each time another worker takes
/// the current one over.
final class RecordName: Sendable {
    private let name: Mutex<String>

    init(_ name: String) {
        self.name = Mutex(name)
    }

    /// The name now.
    var current: String { name.withLock { $0 } }

    /// Changes the name to `new` if it is still `old`; returns the new name, or nil when it was already changed.
    func rename(from old: String, to new: @autoclosure () -> String) -> String? {
        name.withLock { current -> String? in
            guard current == old else { return nil }
            current = new()
            return current
        }
    }
}
