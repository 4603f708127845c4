import DAO
import Mongo
import MongoTestSupport
import Testing

typealias Legacy = Fixtures.Legacy

/// The DAOs of one test database, with the legacy channel stored as the legacy hub wrote it.
struct Cube {
    let database: MongoDatabase
    var channels: ChannelDAO { ChannelDAO(database: database) }
    var areas: AreaDAO { AreaDAO(database: database) }
    var subjects: SubjectDAO { SubjectDAO(database: database) }
    var icube: MongoCollection { database.collection(CollectionName.icube) }

    static func withLegacy(_ test: String = #function, _ body: (Cube) async throws -> Void) async throws {
        try await TestDatabase.with(test) { database in
            try await DatabaseIndexes.ensure(in: database)
            try await database.collection(CollectionName.icube).insertOne(try Fixtures.legacyChannel())
            try await body(Cube(database: database))
        }
    }

    /// The stored channel document, read raw.
    func raw() async throws -> BSONDocument {
        try #require(try await icube.findOne(["_id": .objectID(Legacy.channelID)]))
    }
}

/// The raw element at `areas[i]` or `areas[i].subjects[j]`.
func element(_ document: BSONDocument, area: Int, subject: Int? = nil) -> BSONDocument? {
    guard let areaDocument = document["areas"]?.arrayValue?[safe: area]?.documentValue else { return nil }
    guard let subject else { return areaDocument }
    return areaDocument["subjects"]?.arrayValue?[safe: subject]?.documentValue
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

@Suite("Channels")
struct ChannelDAOTests {
    @Test func addGetUpdateDelete() async throws {
        try await Cube.withLegacy { cube in
            let added = try await cube.channels.add(ChannelDraft(name: "Faculty", desc: "Staff news"))
            #expect(added.areas.isEmpty && added.access.isEmpty)
            #expect(try await cube.channels.get(added.id).name == "Faculty")
            #expect(try await cube.channels.getAll().count == 2)

            let updated = try await cube.channels.update(
                added.id, ChannelDraft(name: "Staff", desc: "d", access: ["ann"]))
            #expect(updated.name == "Staff" && updated.access == ["ann"])
            let kept = try await cube.channels.update(added.id, ChannelDraft(name: "Staff 2", desc: "d"))
            #expect(kept.access == ["ann"])

            try await cube.channels.delete(added.id)
            let error = await #expect(throws: DAOError.self) { try await cube.channels.get(added.id) }
            #expect(error?.code == .channelNotFound)
        }
    }

    @Test func updatingTheLegacyChannelKeepsItsUnknownFieldsAndAreas() async throws {
        try await Cube.withLegacy { cube in
            let before = try await cube.raw()
            _ = try await cube.channels.update(Legacy.channelID, ChannelDraft(name: "Campus!", desc: "new desc"))
            var after = try await cube.raw()
            #expect(after["created_by"] == "legacy-portal")
            after["name"] = before["name"]
            after["desc"] = before["desc"]
            #expect(after == before)
        }
    }

    @Test func missingChannelsAreReported() async throws {
        try await Cube.withLegacy { cube in
            let missing = ObjectID()
            for operation in [
                { _ = try await cube.channels.get(missing) },
                { _ = try await cube.channels.update(missing, ChannelDraft(name: "a", desc: "b")) },
                { try await cube.channels.delete(missing) },
            ] as [@Sendable () async throws -> Void] {
                let error = await #expect(throws: DAOError.self) { try await operation() }
                #expect(error?.code == .channelNotFound)
            }
        }
    }
}

@Suite("Areas")
struct AreaDAOTests {
    @Test func addAppendsAnAreaWithIdAccessAndSubjects() async throws {
        try await Cube.withLegacy { cube in
            let before = try await cube.raw()
            let area = try await cube.areas.add(
                channelID: Legacy.channelID, AreaDraft(name: "Exams", desc: "Exam news"))
            let after = try await cube.raw()
            let stored = try #require(element(after, area: 2))
            #expect(
                stored == [
                    "id": .objectID(area.id), "name": "Exams", "desc": "Exam news", "access": [], "subjects": [],
                ])
            #expect(element(after, area: 0) == element(before, area: 0))
            #expect(element(after, area: 1) == element(before, area: 1))
        }
    }

    @Test func updateChangesOnlyNameAndDescOfTheAddressedArea() async throws {
        try await Cube.withLegacy { cube in
            let before = try await cube.raw()
            let area = try await cube.areas.update(
                channelID: Legacy.channelID, areaID: Legacy.libraryID,
                AreaDraft(name: "Libraries", desc: "All libraries"))
            #expect(area.name == "Libraries" && area.subjects.count == 2)
            let after = try await cube.raw()
            var library = try #require(element(after, area: 0))
            #expect(library["color"] == "#336699")
            library["name"] = "Library"
            library["desc"] = "Library notices"
            #expect(library == element(before, area: 0))
            #expect(element(after, area: 1) == element(before, area: 1))
            #expect(after["created_by"] == "legacy-portal")
        }
    }

    @Test func deleteRemovesOnlyTheAddressedArea() async throws {
        try await Cube.withLegacy { cube in
            let before = try await cube.raw()
            try await cube.areas.delete(channelID: Legacy.channelID, areaID: Legacy.libraryID)
            let after = try await cube.raw()
            #expect(after["areas"]?.arrayValue?.count == 1)
            #expect(element(after, area: 0) == element(before, area: 1))
        }
    }

    @Test func missingChannelOrAreaIsNamed() async throws {
        try await Cube.withLegacy { cube in
            let draft = AreaDraft(name: "a", desc: "b")
            let noChannel = await #expect(throws: DAOError.self) {
                try await cube.areas.add(channelID: ObjectID(), draft)
            }
            #expect(noChannel?.code == .channelNotFound)
            let noChannel2 = await #expect(throws: DAOError.self) {
                try await cube.areas.update(channelID: ObjectID(), areaID: Legacy.libraryID, draft)
            }
            #expect(noChannel2?.code == .channelNotFound)
            let noArea = await #expect(throws: DAOError.self) {
                try await cube.areas.update(channelID: Legacy.channelID, areaID: ObjectID(), draft)
            }
            #expect(noArea?.code == .areaNotFound)
            let noAreaDelete = await #expect(throws: DAOError.self) {
                try await cube.areas.delete(channelID: Legacy.channelID, areaID: ObjectID())
            }
            #expect(noAreaDelete?.code == .areaNotFound)
        }
    }

    @Test func twentyConcurrentAddsLeaveTwentyAreas() async throws {
        try await Cube.withLegacy { cube in
            let channel = try await cube.channels.add(ChannelDraft(name: "Busy", desc: ""))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        _ = try await cube.areas.add(channelID: channel.id, AreaDraft(name: "A\(index)", desc: ""))
                    }
                }
                try await group.waitForAll()
            }
            let stored = try await cube.channels.get(channel.id)
            #expect(stored.areas.count == 20)
            #expect(Set(stored.areas.map(\.name)).count == 20)
        }
    }
}

@Suite("Subjects")
struct SubjectDAOTests {
    let draft = SubjectDraft(name: "Closures", desc: "Closed rooms", level: .recommended, distribution: .alert)

    @Test func addInitialisesTheSubjectAndItsTopicKey() async throws {
        try await Cube.withLegacy { cube in
            let before = try await cube.raw()
            let subject = try await cube.subjects.add(channelID: Legacy.channelID, areaID: Legacy.sportsID, draft)
            #expect(subject.topicKey == "\(Legacy.channelID.hex)-\(Legacy.sportsID.hex)-\(subject.id.hex)")
            let after = try await cube.raw()
            let stored = try #require(element(after, area: 1, subject: 1))
            #expect(
                stored == [
                    "id": .objectID(subject.id), "name": "Closures", "desc": "Closed rooms", "access": [], "tags": [],
                    "opt": ["level": "Recommended", "distribution": "Alert"], "topic_key": .string(subject.topicKey),
                ])
            #expect(element(after, area: 1, subject: 0) == element(before, area: 1, subject: 0))
            #expect(element(after, area: 0) == element(before, area: 0))
        }
    }

    @Test func updateChangesOnlyTheAddressedSubjectsNamedFields() async throws {
        try await Cube.withLegacy { cube in
            let before = try await cube.raw()
            let subject = try await cube.subjects.update(
                channelID: Legacy.channelID, areaID: Legacy.libraryID, subjectID: Legacy.hoursID,
                SubjectDraft(name: "Hours", desc: "When we open", level: .optional, distribution: .information))
            #expect(subject.topicKey == Legacy.hoursTopic)
            #expect(subject.distribution == .information && subject.level == "")
            let after = try await cube.raw()
            var hours = try #require(element(after, area: 0, subject: 0))
            #expect(hours[path: "opt.legacy_flag"] == true)
            #expect(hours["icon"] == "clock")
            #expect(hours["tags"] == ["hours"])
            hours["name"] = "Opening hours"
            hours["desc"] = "Changes to opening hours"
            hours["opt"] = ["level": "Forced", "distribution": "Alert", "legacy_flag": true]
            #expect(hours == element(before, area: 0, subject: 0))
            #expect(element(after, area: 0, subject: 1) == element(before, area: 0, subject: 1))
            #expect(element(after, area: 1) == element(before, area: 1))
        }
    }

    @Test func deleteRemovesOnlyTheAddressedSubject() async throws {
        try await Cube.withLegacy { cube in
            let before = try await cube.raw()
            try await cube.subjects.delete(
                channelID: Legacy.channelID, areaID: Legacy.libraryID, subjectID: Legacy.hoursID)
            let after = try await cube.raw()
            #expect(element(after, area: 0)?["subjects"]?.arrayValue?.count == 1)
            #expect(element(after, area: 0, subject: 0) == element(before, area: 0, subject: 1))
            #expect(element(after, area: 1) == element(before, area: 1))
        }
    }

    @Test func missingChannelAreaOrSubjectIsNamed() async throws {
        try await Cube.withLegacy { cube in
            let cases: [(ObjectID, ObjectID, ObjectID, DAOError.Code)] = [
                (ObjectID(), Legacy.libraryID, Legacy.hoursID, .channelNotFound),
                (Legacy.channelID, ObjectID(), Legacy.hoursID, .areaNotFound),
                (Legacy.channelID, Legacy.libraryID, ObjectID(), .subjectNotFound),
                (Legacy.channelID, Legacy.sportsID, Legacy.hoursID, .subjectNotFound),
            ]
            for (channelID, areaID, subjectID, code) in cases {
                let update = await #expect(throws: DAOError.self) {
                    try await cube.subjects.update(channelID: channelID, areaID: areaID, subjectID: subjectID, draft)
                }
                #expect(update?.code == code)
                let delete = await #expect(throws: DAOError.self) {
                    try await cube.subjects.delete(channelID: channelID, areaID: areaID, subjectID: subjectID)
                }
                #expect(delete?.code == code)
            }
            let add = await #expect(throws: DAOError.self) {
                try await cube.subjects.add(channelID: Legacy.channelID, areaID: ObjectID(), draft)
            }
            #expect(add?.code == .areaNotFound)
            let unchanged = try Fixtures.legacyChannel()
            #expect(try await cube.raw() == unchanged)
        }
    }

    @Test func findsASubjectByItsTopicKey() async throws {
        try await Cube.withLegacy { cube in
            let location = try await cube.subjects.find(topicKey: Legacy.hoursTopic)
            #expect(location.channel.id == Legacy.channelID)
            #expect(location.area.id == Legacy.libraryID)
            #expect(location.subject.id == Legacy.hoursID)
            #expect(location.subject.distribution == .alert)
            let error = await #expect(throws: DAOError.self) { try await cube.subjects.find(topicKey: "nope") }
            #expect(error?.code == .topicNotFound)
            let plan = try await cube.database.runCommand([
                "explain": [
                    "find": .string(CollectionName.icube),
                    "filter": ["areas.subjects.topic_key": .string(Legacy.hoursTopic)],
                ]
            ])
            #expect(LegacyJSONWriter().string(plan).contains("areas.subjects.topic_key"))
        }
    }

    @Test func fiftyConcurrentAddsIntoOneAreaLeaveFiftySubjects() async throws {
        try await Cube.withLegacy { cube in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        _ = try await cube.subjects.add(
                            channelID: Legacy.channelID, areaID: Legacy.sportsID,
                            SubjectDraft(name: "S\(index)", desc: "", level: .optional, distribution: .information))
                    }
                }
                try await group.waitForAll()
            }
            let sports = try #require(try await cube.channels.get(Legacy.channelID).area(Legacy.sportsID))
            #expect(sports.subjects.count == 51)
            #expect(try await cube.channels.get(Legacy.channelID).area(Legacy.libraryID)?.subjects.count == 2)
        }
    }

    @Test func concurrentUpdatesOfDifferentSubjectsAllLand() async throws {
        try await Cube.withLegacy { cube in
            var ids: [ObjectID] = []
            for index in 0..<12 {
                ids.append(
                    try await cube.subjects.add(
                        channelID: Legacy.channelID, areaID: Legacy.sportsID,
                        SubjectDraft(name: "S\(index)", desc: "", level: .optional, distribution: .information)
                    ).id)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, id) in ids.enumerated() {
                    group.addTask {
                        _ = try await cube.subjects.update(
                            channelID: Legacy.channelID, areaID: Legacy.sportsID, subjectID: id,
                            SubjectDraft(
                                name: "renamed \(index)", desc: "d\(index)", level: .forced, distribution: .alert))
                    }
                }
                try await group.waitForAll()
            }
            let sports = try #require(try await cube.channels.get(Legacy.channelID).area(Legacy.sportsID))
            for (index, id) in ids.enumerated() {
                #expect(sports.subject(id)?.name == "renamed \(index)")
                #expect(sports.subject(id)?.level == "Forced")
            }
            #expect(sports.subject(Legacy.fixturesID)?.name == "Fixtures")
        }
    }
}
