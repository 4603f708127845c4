import Testing

@testable import Relay

/// The fan-out's pacer (`PacerState`, the bookkeeping of `SendPacer`) on a simulated clock: a sender that asks for a
/// permit as soon as it has sent, grants handed out as `RateWindow` hands them out (a window's allowance once, from
/// when its second begins), and the database's answer to a grant taken ahead a few milliseconds late.
@Suite("The send pacer on a fake clock")
struct PacerStateTests {
    /// The shared window as `RateWindow` hands it out, on a simulated clock (Unix ms).
    struct SimulatedWindow {
        let limit: Int
        /// Permits granted, by the end of the second they were counted in.
        private(set) var granted: [Int64: Int] = [:]

        /// A grant of up to `count` permits asked for at `now`, and when it is handed out: the current second's
        /// (the next one's in its last `RateWindow.margin`), once that second has begun; a later one while it is
        /// spent.
        mutating func take(_ count: Int, at now: Int64) -> (grant: RateWindow.Grant, at: Int64) {
            var time = now
            while true {
                var windowEnd = (time / 1_000 + 1) * 1_000
                if windowEnd - time < RateWindow.margin { windowEnd += 1_000 }
                let left = limit - granted[windowEnd, default: 0]
                if left > 0 {
                    let count = min(count, limit, left)
                    granted[windowEnd, default: 0] += count
                    return (RateWindow.Grant(count: count, windowEnd: windowEnd), max(time, windowEnd - 1_000))
                }
                time = max(time + 1, windowEnd - RateWindow.margin)
            }
        }
    }

    /// The times (Unix µs) a greedy sender's permits went, over `seconds`, at `limit` a second drawn `chunk` at a
    /// time; `databaseMS`: how long a grant taken ahead takes to come.
    static func sends(limit: Int, chunk: Int, seconds: Int64, databaseMS: Int64 = 4) -> [Int64] {
        var state = PacerState(limit: limit, chunk: chunk)
        var window = SimulatedWindow(limit: limit)
        let start: Int64 = 1_800_000_000_000 + 370  // Unix ms, inside a second
        var clock = start * 1_000  // µs
        var pending: (grant: RateWindow.Grant, at: Int64)?
        var sent: [Int64] = []
        while clock < (start + seconds * 1_000) * 1_000 {
            if let refill = pending, refill.at * 1_000 <= clock {
                state.refilled(refill.grant)
                pending = nil
            }
            let current = clock / 1_000
            guard let permit = state.take(at: current) else {
                // As `SendPacer.acquire`: a grant of its own, waited for.
                let (grant, at) = window.take(chunk, at: current)
                clock = max(clock, at * 1_000)
                state.add(grant)
                continue
            }
            if permit.refill {
                let (grant, at) = window.take(chunk, at: current + databaseMS)
                pending = (grant, max(at, current + databaseMS))
            }
            // As `SendPacer.acquire`: a debt of `slack` or more is slept off, waking `cushion` early.
            let wait = permit.notBefore - current * 1_000
            if wait >= PacerState.slack { clock += wait - PacerState.cushion }
            sent.append(clock)
            clock += 20  // the send itself
        }
        return sent
    }

    /// The most of `times` (µs) within any span of `span` µs.
    static func most(_ times: [Int64], within span: Int64) -> Int {
        var most = 0, first = 0
        for (index, time) in times.enumerated() {
            while times[first] <= time - span { first += 1 }
            most = max(most, index - first + 1)
        }
        return most
    }

    @Test(arguments: [(20, 2), (300, 30), (3_000, 300), (10_000, 1_000)])
    func noSlidingSecondHoldsMoreThanTheCapPlusOneGrantAndTheRateIsKept(limit: Int, chunk: Int) {
        let seconds: Int64 = 10
        let sent = Self.sends(limit: limit, chunk: chunk, seconds: seconds)
        let busiest = Self.most(sent, within: 1_000_000)
        #expect(busiest <= limit + chunk, "\(busiest) permits within one second at a cap of \(limit)")
        // Spread, not in bursts: no tenth of a second holds more than the spacing lets through, and the few a sender
        // may take early (`slack`).
        let spacing = PacerState(limit: limit, chunk: chunk).spacing
        let tenth = Self.most(sent, within: 100_000)
        #expect(tenth <= Int(100_000 / spacing) + PacerState.slack.quotient(of: limit) + 2, "\(tenth) within 100 ms")
        // And the rate is kept: at least 90 % of the cap over the run (the headroom and the last 100 ms of each
        // second, when nothing goes, take the rest).
        #expect(sent.count >= Int(seconds) * limit * 9 / 10 - limit, "\(sent.count) in \(seconds) s")
    }

    @Test func aWindowsLeftoversAreDroppedAtItsDeadlineNotCarriedIntoTheNext() {
        var state = PacerState(limit: 100, chunk: 100)
        state.add(RateWindow.Grant(count: 100, windowEnd: 2_000))
        #expect(state.take(at: 1_500) != nil)
        // Past the deadline (100 ms before the second's end) the rest cannot be used.
        #expect(state.take(at: 1_900) == nil)
        state.add(RateWindow.Grant(count: 10, windowEnd: 3_000))
        #expect(state.remaining == 10)
        // A grant of an older window, come late, adds nothing.
        state.add(RateWindow.Grant(count: 50, windowEnd: 2_000))
        #expect(state.remaining == 10)
        #expect(state.used == [2_000: 1])
    }

    @Test func theNextGrantIsAskedForOnceHalfAChunkIsLeftAndOnlyOnceUntilItComes() {
        var state = PacerState(limit: 1_000, chunk: 10)
        state.add(RateWindow.Grant(count: 10, windowEnd: 1_000))
        let refills = (0..<10).compactMap { _ in state.take(at: 100) }.map(\.refill)
        #expect(refills == [false, false, false, false, true, false, false, false, false, false])
        state.refilled(RateWindow.Grant(count: 10, windowEnd: 1_000))
        #expect(state.remaining == 10 && !state.refilling)
    }
}

extension Int64 {
    /// How many permits at `limit` a second fit in this many microseconds (the slack a sender may go early by).
    fileprivate func quotient(of limit: Int) -> Int { Int(self * Int64(limit) / 1_000_000) }
}

@Suite("The subscription calls' spacing on a fake clock")
struct CallSpacerTests {
    @Test(arguments: [20, 3_000])
    func callsAskingAtOnceGetSlotsNoSlidingSecondHoldsMoreThanTheRate(limit: Int) {
        let spacer = CallSpacer(limit: limit, now: { 0 })
        // Three seconds' calls all asking at the start of a second, as a grant's calls do, then more at the next.
        let start: Int64 = 1_800_000_000_000_000  // Unix µs
        var slots = (0..<(limit * 3)).map { _ in spacer.slot(at: start) }
        slots += (0..<limit).map { _ in spacer.slot(at: start + 1_000_000) }
        #expect(slots == slots.sorted() && Set(slots).count == slots.count)
        // The rate spread over the 900 ms before a window's deadline: a tenth more than the rate at most in any
        // second (20 a second: 22), where grants alone let two windows' calls meet (40 and more).
        let most = PacerStateTests.most(slots, within: 1_000_000)
        #expect(most <= limit + limit / 9 + 1, "\(most) calls within one second at \(limit) a second")
        #expect(slots[1] - slots[0] == spacer.spacing)
    }
}
