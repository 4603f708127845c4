@testable import DAO
import Testing

/// The gate that runs one database operation for the requests that arrive together: who goes in which batch, who
/// gets which outputs, and what a failing batch does, with an operation the test holds open instead of a database.
@Suite("Batching gate")
struct BatchingGateTests {
    /// The batches an operation ran, and a latch that holds the first one open until the test opens it.
    actor Operation {
        private(set) var batches: [[Int]] = []
        private var held: CheckedContinuation<Void, Never>?
        private var holding = true

        /// Records `items`; the first batch waits for `open()`; answers each item doubled, or fails on 13.
        func run(_ items: [Int]) async throws -> [Int] {
            batches.append(items)
            if batches.count == 1 && holding { await withCheckedContinuation { held = $0 } }
            if items.contains(13) { throw Unlucky() }
            return items.map { $0 * 2 }
        }

        func open() {
            holding = false
            held?.resume()
            held = nil
        }

        var isHolding: Bool { held != nil }
    }

    struct Unlucky: Error {}

    @Test func callersArrivingDuringABatchGoTogetherInTheNextEachGettingItsOwnOutputs() async throws {
        let operation = Operation()
        let gate = BatchingGate<Int, Int>(maximumBatch: 16) { try await operation.run($0) }
        async let first = gate.submit([0])
        while await !operation.isHolding { await Task.yield() }
        // Twenty callers of two items each arrive while the first batch runs.
        let outputs = try await withThrowingTaskGroup(of: (Int, [Int]).self) { group in
            for caller in 1...20 {
                group.addTask { (caller, try await gate.submit([caller * 100, caller * 100 + 1])) }
            }
            while await gate.waitingItems < 40 { await Task.yield() }
            await operation.open()
            var outputs: [Int: [Int]] = [:]
            for try await (caller, answer) in group { outputs[caller] = answer }
            return outputs
        }
        #expect(try await first == [0])
        for caller in 1...20 { #expect(outputs[caller] == [caller * 200, caller * 200 + 2]) }
        let batches = await operation.batches
        // One batch for the first caller, then whole submissions of the forty waiting items, at most 16 a batch.
        #expect(batches.count == 4)
        #expect(batches.dropFirst().map(\.count) == [16, 16, 8])
        #expect(
            batches.dropFirst().allSatisfy { batch in
                stride(from: 0, to: batch.count, by: 2).allSatisfy { batch[$0] + 1 == batch[$0 + 1] }
            })
    }

    @Test func aFailingBatchFailsItsCallersAndTheNextBatchIsTriedAfresh() async throws {
        let operation = Operation()
        await operation.open()
        let gate = BatchingGate<Int, Int>(maximumBatch: 16) { try await operation.run($0) }
        await #expect(throws: Unlucky.self) { try await gate.submit([13, 1]) }
        #expect(try await gate.submit(2) == 4)
        #expect(try await gate.submit([]) == [])
        #expect(await operation.batches == [[13, 1], [2]])
    }

    @Test func anOperationAnsweringTheWrongNumberOfOutputsFailsItsCallers() async throws {
        let gate = BatchingGate<Int, Int>(maximumBatch: 16) { items in Array(items.dropLast()) }
        await #expect(throws: BatchingGateError.self) { try await gate.submit([1, 2]) }
    }
}
