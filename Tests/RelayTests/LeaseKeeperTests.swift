import DAO
@testable import Relay
import Synchronization
import Testing

@Suite("Keeping leases")
struct LeaseKeeperTests {
    /// A store of named leases in memory, on a clock the test moves, that counts its renewals.
    final class Store: Sendable {
        let clock = Atomic<Int64>(1_000)
        /// Who holds each name in the store, and until when.
        let leases = Mutex<[String: RelayLease]>([:])
        let renewals = Atomic<Int>(0)

        /// The keeper's `renew`: moves on what `owner` holds or nobody holds any more.
        func renew(_ due: [String: RelayLease], until: Int64) -> Set<String> {
            renewals.add(1, ordering: .relaxed)
            let now = clock.load(ordering: .relaxed)
            return leases.withLock { leases in
                var kept = Set<String>()
                for (key, lease) in due {
                    if let held = leases[key], held.owner != lease.owner, held.until > now { continue }
                    leases[key] = RelayLease(owner: lease.owner, until: until)
                    kept.insert(key)
                }
                return kept
            }
        }

        func keeper() -> LeaseKeeper<String> {
            LeaseKeeper(duration: .seconds(4), now: { self.clock.load(ordering: .relaxed) }) { due, until in
                self.renew(due, until: until)
            }
        }
    }

    @Test func aLeaseIsTakenOnlyWhenFreeAndRenewedOnlyOnceLessThanTheMarginIsLeft() async throws {
        let store = Store(), mine = store.keeper(), theirs = store.keeper()
        #expect(try await mine.take("project", owner: "a", unlessHeldFor: 2_000))
        #expect(try await !theirs.take("project", owner: "b", unlessHeldFor: 2_000))
        #expect(mine.lease(of: "project") == RelayLease(owner: "a", until: 5_000))
        #expect(theirs.lease(of: "project") == nil)
        // Held for 3 s more: no call to the store.
        store.clock.store(2_000, ordering: .relaxed)
        #expect(try await mine.take("project", owner: "a", unlessHeldFor: 2_000))
        #expect(store.renewals.load(ordering: .relaxed) == 2)
        // Held for 1.5 s more: renewed.
        store.clock.store(3_500, ordering: .relaxed)
        #expect(try await mine.take("project", owner: "a", unlessHeldFor: 2_000))
        #expect(mine.lease(of: "project")?.until == 7_500)
        // Run out: the other takes it over.
        store.clock.store(8_000, ordering: .relaxed)
        #expect(try await theirs.take("project", owner: "b", unlessHeldFor: 2_000))
        #expect(try await !mine.take("project", owner: "a", unlessHeldFor: 2_000))
        #expect(mine.lease(of: "project") == nil)
    }

    @Test func renewingMovesOnlyTheDueLeasesAndKeepsALostOneHeldButNoLongerSafe() async throws {
        let store = Store(), keeper = store.keeper()
        store.leases.withLock {
            $0 = [
                "m1": RelayLease(owner: "claim-1", until: 2_000),
                "m2": RelayLease(owner: "claim-1", until: 2_000),
                "m3": RelayLease(owner: "claim-2", until: 4_500),
            ]
        }
        #expect(keeper.hold("m1", RelayLease(owner: "claim-1", until: 2_000)))
        #expect(keeper.hold("m2", RelayLease(owner: "claim-1", until: 2_000)))
        #expect(keeper.holdIfFree("m3", RelayLease(owner: "claim-2", until: 4_500)))
        #expect(!keeper.holdIfFree("m3", RelayLease(owner: "claim-3", until: 9_000)))
        // Another process took m2 over meanwhile.
        store.leases.withLock { $0["m2"] = RelayLease(owner: "elsewhere", until: 9_000) }
        #expect(keeper.lease(of: "m1", holdingFor: 500) != nil)
        #expect(keeper.lease(of: "m1", holdingFor: 1_500) == nil)

        let lost = try await keeper.renewDue { _ in 2_000 }
        #expect(lost == 1)
        #expect(keeper.lease(of: "m1") == RelayLease(owner: "claim-1", until: 5_000))
        #expect(keeper.lease(of: "m2")?.until == 0, "lost: still held, for its last write, but not safe")
        #expect(keeper.lease(of: "m2", holdingFor: 0) == nil)
        #expect(keeper.lease(of: "m3")?.until == 4_500, "not due: not renewed")

        keeper.release(["m1", "m2"])
        #expect(Set(keeper.keys) == ["m3"])
        #expect(try await keeper.renewDue { _ in 100 } == nil, "none due")
    }

    @Test func aLeaseThatHoldsWhileAnotherDoesIsSafeOnlyWhileThatOneHolds() async throws {
        let record = Atomic<Int64>(3_000)
        let keeper = LeaseKeeper<String>(
            duration: .seconds(4), now: { 1_000 },
            end: { $0.until == .max ? record.load(ordering: .relaxed) : $0.until },
            renew: { _, _ in [] })
        #expect(keeper.holdIfFree("direct", RelayLease(owner: "worker/1", until: .max)))
        #expect(keeper.lease(of: "direct", holdingFor: 1_000) != nil)
        record.store(1_500, ordering: .relaxed)
        #expect(keeper.lease(of: "direct", holdingFor: 1_000) == nil)
        #expect(try await keeper.renewDue { _ in 3_000 } == nil, "never renewed by the keeper itself")
    }
}
