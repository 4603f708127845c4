import FCM
import Foundation
@testable import Relay
import Synchronization
import Testing

@Suite("Back-pressure on FCM")
struct RelayGateTests {
    static func unavailable(retryAfter: Duration?) -> FCMError {
        FCMError(code: .unavailable, httpStatus: 503, message: "down", isRetryable: true, retryAfter: retryAfter)
    }

    static let clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test func aCallDueBeforeThePauseEndsGivesUpAtOnceAndOneDueAfterWaits() async throws {
        let gate = RelayGate(concurrency: 2, now: Self.clock)
        let first = try #require(await gate.admit())
        let until = try #require(gate.failed(first, error: Self.unavailable(retryAfter: .milliseconds(300))))
        let started = Self.clock()
        #expect(await gate.admit(notAfter: until - 100) == nil, "its rate window ends inside the pause")
        #expect(Self.clock() - started < 100, "without waiting for the pause")
        let probe = try #require(await gate.admit(notAfter: until + 1_000))
        #expect(probe.probe && Self.clock() >= until)
        gate.succeeded(probe)
    }

    @Test func a503ClosesTheGateUntilRetryAfterThenOneProbeGoesAlone() async throws {
        let gate = RelayGate(concurrency: 4, now: Self.clock)
        let first = try #require(await gate.admit())
        let second = try #require(await gate.admit())
        let until = try #require(gate.failed(first, error: Self.unavailable(retryAfter: .milliseconds(300))))
        #expect(until >= Self.clock() + 250)
        // The other send already at FCM fails too: the pause does not grow with it.
        #expect(gate.failed(second, error: Self.unavailable(retryAfter: .milliseconds(300))) ?? 0 <= until + 50)

        let probe = try #require(await gate.admit())
        #expect(probe.probe && Self.clock() >= until)
        let admitted = Atomic<Int>(0)
        let others = Task {
            for _ in 0..<3 {
                guard let ticket = await gate.admit() else { return }
                admitted.add(1, ordering: .relaxed)
                gate.succeeded(ticket)
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(admitted.load(ordering: .relaxed) == 0, "nothing goes beside the probe")
        gate.succeeded(probe)
        await others.value
        #expect(admitted.load(ordering: .relaxed) == 3)
    }

    @Test func afterAProbeTheWindowWidensByOneForEachSendTaken() async throws {
        let gate = RelayGate(concurrency: 8, now: Self.clock)
        let failing = try #require(await gate.admit())
        gate.failed(failing, error: Self.unavailable(retryAfter: .milliseconds(50)))
        gate.succeeded(try #require(await gate.admit()))
        // Window 1: one in flight at a time.
        let one = try #require(await gate.admit())
        let waiting = Task { await gate.admit() }
        try await Task.sleep(for: .milliseconds(100))
        gate.succeeded(one)  // window 2
        let two = try #require(await waiting.value)
        let three = try #require(await gate.admit())
        #expect(!two.probe && !three.probe)
        gate.succeeded(two)
        gate.succeeded(three)
    }

    @Test func aPauseElsewhereHoldsThisGateAndOtherErrorsDoNot() async throws {
        let gate = RelayGate(concurrency: 2, now: Self.clock)
        let refused = try #require(await gate.admit())
        let invalid = FCMError(code: .invalidArgument, httpStatus: 400, message: "bad", isRetryable: false)
        #expect(gate.failed(refused, error: invalid) == nil)
        #expect(gate.pause() == nil)
        gate.pausedElsewhere(until: Self.clock() + 200)
        #expect(gate.pause() != nil)
        let probe = try #require(await gate.admit())
        #expect(probe.probe)
        gate.succeeded(probe)
    }
}
