import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("Receipts in the database")
struct ReceiptDAOTests {
    static func receipt(_ message: ObjectID, _ device: ObjectID, _ event: Receipt.Event) -> Receipt {
        Receipt(
            message: message, device: device, person: nil, event: event, response: nil, at: 1_760_000_000_000,
            platform: .android)
    }

    /// Who reported an event, for a few devices and for a page of an audience (read 64 a command): exactly the
    /// devices asked for that reported that event of that message, whatever their other events, the devices between
    /// them not asked for, and the receipts of other messages.
    @Test func whoReportedAnEventIsExactForAFewDevicesAndForAPage() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let dao = ReceiptDAO(database: database)
            let message = ObjectID(), other = ObjectID()
            let devices = (0..<60).map { _ in ObjectID() }.sorted { $0.hex < $1.hex }
            var list: [Receipt] = []
            for (index, device) in devices.enumerated() {
                list.append(Self.receipt(message, device, .received))
                if index % 3 == 0 { list.append(Self.receipt(message, device, .acknowledged)) }
                if index % 5 == 0 { list.append(Self.receipt(other, device, .acknowledged)) }
            }
            #expect(try await dao.store(list).allSatisfy { $0 })
            // Every other device asked: those between must be left out.
            let asked = devices.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            let expected = Set(devices.enumerated().filter { $0.offset % 6 == 0 }.map(\.element))
            #expect(try await dao.acknowledged(message: message, devices: asked) == expected)
            #expect(try await dao.reported(.received, message: message, devices: asked) == Set(asked))
            #expect(try await dao.reported(.opened, message: message, devices: asked).isEmpty)
            let few = Array(devices.prefix(7))
            #expect(try await dao.acknowledged(message: message, devices: few) == [devices[0], devices[3], devices[6]])
            #expect(try await dao.acknowledged(message: other, devices: few) == [devices[0], devices[5]])
            #expect(try await dao.acknowledged(message: message, devices: []).isEmpty)
        }
    }
}
