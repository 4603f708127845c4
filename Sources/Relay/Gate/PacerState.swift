/// What `SendPacer` knows, without a clock, a sleep or a database: the permits in hand from the shared window's
/// grants, when the next one may go (a leaky bucket), and what each window's permits were used for. A caller asks at
/// a time it names (`take(at:)`), so the rate can be checked on a fake clock (`PacerStateTests`).
struct PacerState: Sendable {
    /// A permit: the time it must be used by (Unix ms), the earliest time it may go (Unix µs), and whether the next
    /// grant should be taken now, ahead of need.
    struct Permit: Sendable {
        var deadline: Int64
        var notBefore: Int64
        var refill: Bool
    }

    /// The debt (µs) at which the bucket sleeps, and how much of it (µs) it leaves to a late wake-up.
    static let slack: Int64 = 5_000, cushion: Int64 = 2_000

    /// How many windows `used` keeps.
    static let keptWindows = 64

    /// The share of a second's allowance the permits are spread for (percent): a send reaches FCM a few
    /// milliseconds after its permit, give or take, and permits go up to `slack` early. Spread for the whole
    /// allowance, up to 3,043 sends arrived at the fake FCM in some second (not one of the windows) at a cap of 3,000.
    static let headroomPercent: Int64 = 97

    /// The time between two permits, in microseconds: `headroomPercent` of a window's allowance spread over the part
    /// of it before the deadline, so that sends leave at the rate, not in a burst that a late request could carry
    /// into the next second.
    let spacing: Int64
    /// The permits left at which the next grant is taken ahead: a grant is a database write of a few milliseconds
    /// under load, a permit a fraction of one at high rates, so a grant taken only once the permits ran out lost its
    /// wait to the window. The worker's chunk is a tenth of a second's allowance: half of one covers 50 ms of a
    /// database slowed by the fan-out's writes.
    let lowWater: Int

    private(set) var remaining = 0
    private(set) var deadline: Int64 = 0
    private(set) var windowEnd: Int64 = 0
    /// The earliest time of the next permit (Unix µs).
    private(set) var nextAt: Int64 = 0
    /// Whether a grant is being taken ahead of need (`refill`).
    private(set) var refilling = false
    /// Permits used, by the end of the window they came from (Unix ms); the last `keptWindows` windows.
    private(set) var used: [Int64: Int] = [:]

    /// The state of a pacer at `limit` permits a second, drawing `chunk` at a time.
    init(limit: Int, chunk: Int) {
        spacing = (1_000 - RateWindow.margin) * 1_000 * 100 / (Int64(max(limit, 1)) * Self.headroomPercent)
        lowWater = chunk / 2
    }

    /// A permit for a caller at `current` (Unix ms), or nil when none is in hand that can still be used (take a grant
    /// and `add` it).
    mutating func take(at current: Int64) -> Permit? {
        guard remaining > 0, current < deadline else { return nil }
        remaining -= 1
        used[windowEnd, default: 0] += 1
        // Spaced as a leaky bucket: never sooner than `spacing` after the previous permit, so that neither a
        // window's start nor a pause's end lets a burst through.
        let notBefore = max(current * 1_000, nextAt)
        nextAt = notBefore + spacing
        let refill = remaining <= lowWater && !refilling
        if refill { refilling = true }
        return Permit(deadline: deadline, notBefore: notBefore, refill: refill)
    }

    /// Adds `grant`'s permits: to the window in use, or in place of it for a later window (an older window's
    /// leftovers are dropped). `RateWindow` hands a grant out only once its second has begun, after the deadline
    /// of the one before: a later window's grant never waits behind permits still usable.
    mutating func add(_ grant: RateWindow.Grant) {
        if grant.windowEnd == windowEnd {
            remaining += grant.count
        } else if grant.windowEnd > windowEnd {
            (remaining, deadline, windowEnd) = (grant.count, grant.deadline, grant.windowEnd)
            if used.count > Self.keptWindows, let oldest = used.keys.min() {
                used.removeValue(forKey: oldest)
            }
        }
    }

    /// The grant taken ahead of need came (nil: the database failed, and callers take their own).
    mutating func refilled(_ grant: RateWindow.Grant?) {
        if let grant { add(grant) }
        refilling = false
    }
}
