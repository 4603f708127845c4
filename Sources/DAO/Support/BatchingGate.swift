/// Runs one database operation for many callers at once, first come first served: while one batch runs, the items
/// submitted meanwhile wait and go together in the next. A lone caller pays one operation as before; a crowd (200
/// phones posting the receipt of the same message within a second) pays one operation per batch, not per caller,
/// and the batches grow with the load by themselves, with no timer to tune.
///
/// Each caller gets back the outputs of its own items, in order. A batch that fails fails every caller in it; the
/// next batch is tried afresh. A batch never starts before a caller's submission, so it reads every write made
/// before the call.
public actor BatchingGate<Item: Sendable, Output: Sendable> {
    /// Runs one batch: the outputs of `items`, one per item, in order.
    public typealias Operation = @Sendable ([Item]) async throws -> [Output]

    private struct Waiting {
        var items: [Item]
        var continuation: CheckedContinuation<[Output], any Error>
    }

    /// The most items one batch holds (a submission larger than that runs alone).
    public let maximumBatch: Int
    private let operation: Operation
    private var waiting: [Waiting] = []
    private var running = false

    public init(maximumBatch: Int, operation: @escaping Operation) {
        self.maximumBatch = maximumBatch
        self.operation = operation
    }

    /// The outputs of `items`, once a batch holding them ran.
    /// - Throws: what the batch's operation threw; `BatchingGateError` when it answered another number of outputs.
    public func submit(_ items: [Item]) async throws -> [Output] {
        guard !items.isEmpty else { return [] }
        return try await withCheckedThrowingContinuation { continuation in
            waiting.append(Waiting(items: items, continuation: continuation))
            guard !running else { return }
            running = true
            Task { await drain() }
        }
    }

    /// How many items wait for the next batch.
    var waitingItems: Int { waiting.reduce(0) { $0 + $1.items.count } }

    /// The output of one item.
    public func submit(_ item: Item) async throws -> Output {
        try await submit([item])[0]
    }

    /// Runs what waits, a batch at a time, until nothing does.
    private func drain() async {
        while !waiting.isEmpty {
            var taken = 0, count = 0
            for next in waiting {
                if taken > 0 && count + next.items.count > maximumBatch { break }
                taken += 1
                count += next.items.count
            }
            let batch = Array(waiting.prefix(taken))
            waiting.removeFirst(taken)
            do {
                let outputs = try await operation(batch.flatMap(\.items))
                guard outputs.count == count else { throw BatchingGateError(expected: count, answered: outputs.count) }
                var offset = 0
                for caller in batch {
                    caller.continuation.resume(returning: Array(outputs[offset..<offset + caller.items.count]))
                    offset += caller.items.count
                }
            } catch {
                for caller in batch { caller.continuation.resume(throwing: error) }
            }
        }
        running = false
    }
}

/// A batch's operation answered another number of outputs than it was given items: a programming error, reported to
/// every caller of the batch rather than answered wrongly.
public struct BatchingGateError: Error, CustomStringConvertible {
    public var expected: Int
    public var answered: Int
    public var description: String { "a batch of \(expected) items was answered with \(answered) outputs" }
}
