import Foundation
import MSIKit
import Testing

@Suite("Cube: the legacy GET /channel shape, merging and subscription information")
struct CubeTests {
    static let openingHours = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e03"
    static let newBooks = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e04"
    static let fixtures = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e05-5a0b1c2d3e4f5a6b7c8d9e06"
    static let timetable = "6b0b1c2d3e4f5a6b7c8d9e10-6b0b1c2d3e4f5a6b7c8d9e11-6b0b1c2d3e4f5a6b7c8d9e12"
    static let results = "6b0b1c2d3e4f5a6b7c8d9e10-6b0b1c2d3e4f5a6b7c8d9e11-6b0b1c2d3e4f5a6b7c8d9e13"

    @Test func decodesTheLegacyShapeIgnoringUnknownFields() throws {
        let cube = try fixtureCube()
        #expect(cube.channels.map(\.id) == ["5a0b1c2d3e4f5a6b7c8d9e01", "6b0b1c2d3e4f5a6b7c8d9e10"])
        let campus = try #require(cube.channels.first)
        #expect(campus.name == "Campus" && campus.desc == "Campus-wide news")
        #expect(campus.areas.map(\.name) == ["Library", "Sports"])
        #expect(
            cube.subjects.map(\.topicKey) == [
                Self.openingHours, Self.newBooks, Self.fixtures, Self.timetable, Self.results,
            ])
        let opening = try #require(cube.subject(topicKey: Self.openingHours))
        #expect(opening.id == "5a0b1c2d3e4f5a6b7c8d9e03")
        #expect(opening.name == "Opening hours" && opening.desc == "Changes to opening hours")
        #expect(opening.level == .forced && opening.distribution == .alert)
        #expect(cube.subject(topicKey: Self.newBooks)?.level == .optIn)
        #expect(cube.subject(topicKey: Self.fixtures)?.level == .recommended)
    }

    @Test func aSubjectWithoutOptIsOptInInformation() throws {
        let results = try #require(try fixtureCube().subject(topicKey: Self.results))
        #expect(results.level == .optIn && results.distribution == .information && results.desc == "")
        #expect(try fixtureCube().channels[1].areas[0].desc == "")
    }

    @Test func jsonThatIsNotAChannelArrayIsAnInvalidResponse() {
        #expect { try Cube(json: Data(#"{"channels": []}"#.utf8)) } throws: { error in
            (error as? MSIKitError)?.code == .invalidResponse
        }
        #expect { try Cube(json: Data(#"[{"name": "no id"}]"#.utf8)) } throws: { error in
            (error as? MSIKitError)?.code == .invalidResponse
        }
    }

    @Test func mergeSubDataMarksEachSubjectInOrder() throws {
        let merged = Cube.mergeSubData(
            try fixtureCube().subjects, subscribed: [Self.fixtures, Self.openingHours, "gone"])
        #expect(
            merged.map(\.subject.topicKey) == [
                Self.openingHours, Self.newBooks, Self.fixtures, Self.timetable, Self.results,
            ])
        #expect(merged.map(\.subscribed) == [true, false, true, false, false])
    }

    @Test func mergeMySubDataKeepsOnlySubscribedSubjects() throws {
        let merged = Cube.mergeMySubData(try fixtureCube().subjects, subscribed: [Self.results, Self.newBooks])
        #expect(merged.map(\.subject.name) == ["New books", "Results"])
        #expect(merged.allSatisfy { $0.subscribed })
        #expect(Cube.mergeMySubData(try fixtureCube().subjects, subscribed: []).isEmpty)
    }

    @Test func subscriptionInfoOfAKnownTopic() throws {
        let info = try fixtureCube().subscriptionInfo(topicKey: Self.timetable, subscribed: [Self.timetable])
        #expect(info.channelName == "Faculty" && info.areaName == "Exams" && info.subjectName == "Timetable")
        #expect(info.level == .recommended && info.subscribed && info.isKnown)
        #expect(try !fixtureCube().subscriptionInfo(topicKey: Self.timetable, subscribed: []).subscribed)
    }

    @Test func subscriptionInfoOfAnUnknownTopicHasThePlaceholders() throws {
        let unknown = "0123456789abcdef01234567-0123456789abcdef01234568-0123456789abcdef01234569"
        let info = try fixtureCube().subscriptionInfo(topicKey: unknown, subscribed: [unknown])
        #expect(info.channelName == "Unknown Channel" && info.areaName == "Unknown Area")
        #expect(info.subjectName == "Unknown Subject" && info.level.rawValue == "")
        #expect(!info.isKnown && info.subscribed)
        #expect(
            try fixtureCube().subscriptionInfo(topicKey: "not a topic", subscribed: []).channelName == "Unknown Channel"
        )
    }

    @Test func aRemovedSubjectKeepsItsChannelAndAreaNames() throws {
        let removed = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e05-0123456789abcdef01234567"
        let info = try fixtureCube().subscriptionInfo(topicKey: removed, subscribed: [])
        #expect(info.channelName == "Campus" && info.areaName == "Sports")
        #expect(info.subjectName == SubscriptionInfo.unknownSubjectName && info.level == .optIn && !info.isKnown)
    }
}
