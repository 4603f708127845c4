import DAO
import Foundation
import HubCore
@testable import HubServer
import Mongo
import MongoTestSupport
import Testing

/// The reminder worker on a clock the test moves: each reminder is stored at its time and not a millisecond before,
/// once however often the worker looks; a worker that dies holding a claim is taken over when its lease ends; a hub
/// that was down at a reminder's time sends it when it comes back while the event has not started, and nothing for
/// one that has; an edit moves what was not sent yet. The worker's own passes (`sendDueReminders`), the real database,
/// no sleeping.
@Suite("The reminder worker on a fake clock")
struct EventWorkerTests {
    /// 2027-01-15T15:00:00Z.
    static let start: Int64 = 1_800_025_200_000
    /// The event's start, 2027-01-16T09:00 in Berlin: 08:00Z.
    static let startsAt: Int64 = 1_800_086_400_000
    static let hour: Int64 = 3_600_000
    static let minute: Int64 = 60_000

    /// A Berlin event to the chess group on `date` at 09:00, reminders an hour and ten minutes before.
    static func body(date: String = "2027-01-16", reminders: String = #"["PT1H", "PT10M"]"#) throws -> BSONDocument {
        try BSONDocument(
            extendedJSON: #"""
                {"title": "Parents' evening", "message": "Meet the teachers.", "starts_at": "\#(date)T09:00:00",
                 "tz": "Europe/Berlin", "reminders": \#(reminders), "to": {"groups": ["chess"]}}
                """#)
    }

    /// What a test drives: the services on the clock, the worker's pass, and the reminders stored so far.
    struct World {
        let database: MongoDatabase
        let clock: ManualClock
        let services: HubServices
        let compose: EventService.Compose
        static let admin = Identity(name: "root", role: .admin, kind: .token)

        /// One pass of the worker at the clock's time; how many events it claimed.
        func pass() async throws -> Int { try await services.events.sendDueReminders(compose: compose) }

        func create(_ body: BSONDocument) async throws -> Event {
            try await services.events.create(try EventController.draft(body), compose: compose, as: Self.admin)
        }

        /// The stored reminders of `event`, oldest first: their lead and their pop-up text.
        func reminders(of event: Event) async throws -> [(lead: String, desc: String)] {
            try await database.collection(CollectionName.message).find(
                ["data.event": .string(event.id.hex)], options: FindOptions(sort: ["timestamp": 1, "_id": 1])
            ).map { message in
                let data = message["data"]?.documentValue
                return (data?["reminder"]?.stringValue ?? "", message["desc"]?.stringValue ?? "")
            }
        }
    }

    static func with(_ test: String = #function, _ body: (World) async throws -> Void) async throws {
        try await TestDatabase.with(test) { database in
            try await DatabaseIndexes.ensure(in: database)
            try await RoomTests.seed(database)
            let clock = ManualClock(start)
            // No relay runs here: the backlog bound (the age of the oldest unsent message) is off.
            let services = HubServices(
                pool: try TestDatabase.sharedPool(), database: database, relayMaxBacklog: nil, bcryptCost: 4,
                now: { clock.now() })
            try await services.loadCopies()
            try await body(
                World(
                    database: database, clock: clock, services: services,
                    compose: EventController(services: services).compose))
        }
    }

    @Test func eachReminderIsStoredAtItsTimeNotBeforeAndOnceHoweverOftenTheWorkerLooks() async throws {
        try await Self.with { world in
            let event = try await world.create(try Self.body())
            #expect(event.dueAt == Self.startsAt - Self.hour)
            #expect(try await world.pass() == 0)
            world.clock.set(Self.startsAt - Self.hour - 1)
            #expect(try await world.pass() == 0)
            #expect(try await world.reminders(of: event).isEmpty)

            world.clock.set(Self.startsAt - Self.hour)
            #expect(try await world.pass() == 1)
            #expect(try await world.pass() == 0)
            world.clock.advance(Self.minute)
            #expect(try await world.pass() == 0)
            var stored = try await world.reminders(of: event)
            #expect(stored.map(\.lead) == ["PT1H"])
            // Its text says when the event starts in the event's zone.
            #expect(stored.first?.desc == "Starts Saturday 16 January 2027, 09:00 (Europe/Berlin)")
            #expect(try await world.services.events.event(id: event.id).dueAt == Self.startsAt - 10 * Self.minute)

            world.clock.set(Self.startsAt - 10 * Self.minute)
            #expect(try await world.pass() == 1)
            world.clock.set(Self.startsAt + Self.hour)
            #expect(try await world.pass() == 0)
            stored = try await world.reminders(of: event)
            #expect(stored.map(\.lead) == ["PT1H", "PT10M"])
            #expect(try await world.services.events.event(id: event.id).dueAt == nil)
        }
    }

    @Test func aClaimOfAWorkerThatDiedIsTakenOverWhenItsLeaseEndsAndSentOnce() async throws {
        try await Self.with { world in
            let event = try await world.create(try Self.body())
            world.clock.set(Self.startsAt - Self.hour)
            // A worker claims the event and dies before sending.
            let dead = try await EventDAO(database: world.database, now: { world.clock.now() }).claimDue(
                owner: "dead-replica", now: world.clock.now(),
                leaseMS: world.services.events.lease.milliseconds, limit: 10)
            #expect(dead?.events.map(\.id) == [event.id])
            #expect(try await world.pass() == 0)
            // Held through its lease's last millisecond, free after it.
            world.clock.advance(world.services.events.lease.milliseconds)
            #expect(try await world.pass() == 0)
            #expect(try await world.reminders(of: event).isEmpty)
            world.clock.advance(1)
            #expect(try await world.pass() == 1)
            #expect(try await world.pass() == 0)
            #expect(try await world.reminders(of: event).map(\.lead) == ["PT1H"])
        }
    }

    @Test func aHubDownAtAReminderSendsItOnReturnWhileTheEventIsAheadAndNothingForOneThatStarted() async throws {
        try await Self.with { world in
            let ahead = try await world.create(try Self.body())
            let early = try await world.create(try Self.body(reminders: #"["PT2H"]"#))
            let tomorrow = try await world.create(try Self.body(date: "2027-01-17"))
            // Down from before the first reminder until five minutes before the start: both of `ahead`'s are due.
            world.clock.set(Self.startsAt - 5 * Self.minute)
            #expect(try await world.pass() == 2)
            #expect(try await world.reminders(of: ahead).map(\.lead) == ["PT1H", "PT10M"])
            #expect(try await world.reminders(of: early).map(\.lead) == ["PT2H"])
            // Down again until after `tomorrow` started: its reminders are past their use, and none is sent.
            world.clock.set(Self.startsAt + 24 * Self.hour + Self.minute)
            #expect(try await world.pass() == 1)
            #expect(try await world.reminders(of: tomorrow).isEmpty)
            #expect(try await world.services.events.event(id: tomorrow.id).dueAt == nil)
            #expect(try await world.pass() == 0)
        }
    }

    @Test func anEditMovesEveryReminderNotSentYetAndSendsNoneTwice() async throws {
        try await Self.with { world in
            let event = try await world.create(try Self.body())
            world.clock.set(Self.startsAt - Self.hour)
            #expect(try await world.pass() == 1)
            // Moved to the next day after its first reminder went: both of the new day's are due then, none before.
            let moved = try await world.services.events.replace(
                id: event.id, with: try EventController.draft(try Self.body(date: "2027-01-17")),
                compose: world.compose, as: World.admin)
            #expect(moved.dueAt == Self.startsAt + 24 * Self.hour - Self.hour)
            world.clock.set(Self.startsAt - 10 * Self.minute)
            #expect(try await world.pass() == 0)
            world.clock.set(Self.startsAt + 23 * Self.hour)
            #expect(try await world.pass() == 1)
            world.clock.set(Self.startsAt + 24 * Self.hour - 10 * Self.minute)
            #expect(try await world.pass() == 1)
            #expect(try await world.pass() == 0)
            let stored = try await world.reminders(of: event)
            #expect(stored.map(\.lead) == ["PT1H", "PT1H", "PT10M"])
            #expect(stored.last?.desc == "Starts Sunday 17 January 2027, 09:00 (Europe/Berlin)")
        }
    }
}
