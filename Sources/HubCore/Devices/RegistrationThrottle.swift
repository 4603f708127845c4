import DAO
import HubTime
import Synchronization

/// The per-address limit on device registrations, shared by every replica through the counters of
/// `RateWindowDAO`, taken from the shared minute a few registrations at a time: a burst from one address (a
/// school's network behind one public address, a phone farm) costs the database one command per few
/// registrations, not one each. The shared counter stays the limit: a process counts there what it takes, and
/// holds back at most `chunk - 1` of an address's minute. Under 120 a minute it takes one at a time, exactly as
/// the counter says.
final class RegistrationThrottle: Sendable {
    private struct Allowance {
        /// The minute (Unix ms / 60,000) the allowance was taken in: it lapses with it.
        var minute: Int64
        /// Registrations taken from the shared counter and not yet used.
        var left: Int
        /// The take from the shared counter under way, which every caller that finds none left waits for.
        var refill: Task<Int, any Error>?
    }

    private let rates: RateWindowDAO
    private let now: UnixClock
    private let allowances = Mutex<[String: Allowance]>([:])
    /// Above this many addresses held, those of past minutes are dropped.
    private static let pruneAbove = 4_096

    init(rates: RateWindowDAO, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.rates = rates
        self.now = now
    }

    /// How many registrations one take from the shared counter asks for when the limit is `perMinute`.
    static func chunk(perMinute: Int) -> Int { max(1, min(16, perMinute / 60)) }

    /// Whether a client at `address` may register another device now: `perMinute` a minute at most from its
    /// address (an IPv6 one's /64), and for IPv6 `ClientAddress.siteLimitFactor` times that from its /48, all replicas
    /// together.
    func mayRegister(from address: ClientAddress, perMinute: Int) async throws -> Bool {
        guard try await mayRegister(from: address.throttleKey, perMinute: perMinute) else { return false }
        guard let site = address.siteThrottleKey else { return true }
        return try await mayRegister(from: site, perMinute: perMinute * ClientAddress.siteLimitFactor)
    }

    /// Whether the throttle key `address` may register another device now, `perMinute` a minute at most, all
    /// replicas together.
    func mayRegister(from address: String, perMinute: Int) async throws -> Bool {
        let key = "register:\(address)"
        while true {
            let minute = now() / 60_000
            let next: Task<Int, any Error>? = allowances.withLock { allowances in
                var allowance =
                    allowances[key].flatMap { $0.minute == minute ? $0 : nil } ?? Allowance(minute: minute, left: 0)
                defer { allowances[key] = allowance }
                if allowance.left > 0 {
                    allowance.left -= 1
                    return nil
                }
                if let refill = allowance.refill { return refill }
                if allowances.count > Self.pruneAbove { allowances = allowances.filter { $0.value.minute >= minute } }
                allowance.refill = Task { try await self.refill(key, minute: minute, perMinute: perMinute) }
                return allowance.refill
            }
            guard let refill = next else { return true }
            // Once it is done the allowance holds what it took: taken from there, like any other caller.
            guard try await refill.value > 0 else { return false }
        }
    }

    /// Takes a chunk of `key`'s minute from the shared counter and adds what it got to the allowance.
    private func refill(_ key: String, minute: Int64, perMinute: Int) async throws -> Int {
        let granted: Int
        do {
            granted = try await rates.take(
                Self.chunk(perMinute: perMinute), of: key, limit: perMinute, windowMS: 60_000
            ).granted
        } catch {
            allowances.withLock { $0[key]?.refill = nil }
            throw error
        }
        allowances.withLock { allowances in
            guard var allowance = allowances[key], allowance.minute == minute else { return }
            allowance.left += granted
            allowance.refill = nil
            allowances[key] = allowance
        }
        return granted
    }
}
