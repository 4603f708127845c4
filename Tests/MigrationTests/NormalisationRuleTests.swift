import DAO
import Foundation
@testable import Migration
import Mongo
import Testing

/// Each rule on the legacy fixture, without a database: the Swift rules against the Python statement of them.
@Suite struct NormalisationRuleTests {
    @Test func cubeFixtureNormalisesToTheExpectedDocumentsAndCounts() throws {
        var tally = RuleTally()
        let normalised = try LegacyFixtures.legacyChannels().map { ChannelNormaliser().normalise($0, tally: &tally) }
        Expect.sameDocuments(normalised, try LegacyFixtures.expectedChannels())
        var report = MigrationReport(source: "test", dryRun: true)
        report.rules = tally
        try Expect.expectedRuleCounts(report, collections: ["icube"])
    }

    @Test func messageFixtureNormalisesToTheExpectedDocumentsAndCounts() throws {
        var tally = RuleTally()
        let keys = Set(try LegacyFixtures.expectedChannels().flatMap(topicKeys))
        let normaliser = MessageNormaliser(knownTopicKeys: keys)
        let normalised = try LegacyFixtures.legacyMessages().map { normaliser.normalise($0, tally: &tally) }
        // The fixture's two conflicting messages are not in the expected result: drop them by _id and msi_key.
        var seenIDs = Set<DocumentKey>(), seenKeys = Set<DocumentKey>()
        let kept = normalised.filter {
            seenIDs.insert(DocumentKey($0["_id"] ?? .null)).inserted
                && seenKeys.insert(DocumentKey($0["msi_key"] ?? .null)).inserted
        }
        Expect.sameDocuments(kept, try LegacyFixtures.expectedMessages())
        var report = MigrationReport(source: "test", dryRun: true)
        report.rules = tally
        try Expect.expectedRuleCounts(report, collections: ["message"])
    }

    @Test func hexStringIDsBecomeObjectIDsAndOtherIDsAreKept() {
        let channel: BSONDocument = [
            "_id": "5A0B1C2D3E4F5A6B7C8D9E01", "name": "c", "desc": "", "access": [],
            "areas": [
                [
                    "id": "5a0b1c2d3e4f5a6b7c8d9e02", "name": "a", "desc": "", "access": [],
                    "subjects": [
                        [
                            "id": "legacy-7", "name": "s", "desc": "", "access": [], "tags": [], "topic_key": "t",
                            "opt": ["level": "", "distribution": "Alert"],
                        ]
                    ],
                ]
            ],
        ]
        var tally = RuleTally()
        let normalised = ChannelNormaliser().normalise(channel, tally: &tally)
        #expect(normalised["_id"] == .objectID(ObjectID(hex: "5a0b1c2d3e4f5a6b7c8d9e01")!))
        #expect(
            normalised[path: "areas"]?.arrayValue?.first?.documentValue?["id"]?.objectIDValue?.hex
                == "5a0b1c2d3e4f5a6b7c8d9e02")
        let subject = normalised[path: "areas"]?.arrayValue?.first?.documentValue?["subjects"]?.arrayValue?.first
        #expect(subject?.documentValue?["id"] == "legacy-7")
        #expect(tally.count(.cubeIDFromHexString) == 2)
        #expect(tally.count(.cubeIDNotObjectIDKept) == 1)
    }

    @Test func existingTopicKeyIsNeverChangedEvenWhenItDoesNotMatch() {
        let channelID = ObjectID(), areaID = ObjectID(), subjectID = ObjectID()
        let stale = "\(ObjectID().hex)-\(areaID.hex)-\(subjectID.hex)"
        let channel: BSONDocument = [
            "_id": .objectID(channelID), "name": "c", "desc": "", "access": [],
            "areas": [
                [
                    "id": .objectID(areaID), "name": "a", "desc": "", "access": [],
                    "subjects": [
                        [
                            "id": .objectID(subjectID), "name": "s", "desc": "", "access": [], "tags": [],
                            "topic_key": .string(stale), "opt": ["level": "Forced", "distribution": "Alert"],
                        ],
                        [
                            "id": .objectID(subjectID), "name": "s2", "desc": "", "access": [], "tags": [],
                            "opt": ["level": "Forced", "distribution": "Alert"],
                        ],
                    ],
                ]
            ],
        ]
        var tally = RuleTally()
        let subjects =
            ChannelNormaliser().normalise(channel, tally: &tally)[path: "areas"]?.arrayValue?.first?
            .documentValue?["subjects"]?.arrayValue ?? []
        #expect(subjects.first?.documentValue?["topic_key"]?.stringValue == stale)
        #expect(
            subjects.last?.documentValue?["topic_key"]?.stringValue
                == Subject.topicKey(channelID: channelID, areaID: areaID, subjectID: subjectID))
        #expect(tally.count(.topicKeyMismatchKept) == 1)
        #expect(tally.count(.topicKeyComputed) == 1)
    }

    @Test func missingArraysAndLevelAreAddedButADistributionIsOnlyReported() {
        let channel: BSONDocument = [
            "_id": .objectID(ObjectID()), "name": "c", "desc": "",
            "areas": [
                [
                    "id": .objectID(ObjectID()), "name": "a", "desc": "",
                    "subjects": [
                        ["id": .objectID(ObjectID()), "name": "s", "desc": "", "opt": ["distribution": "Push"]],
                        ["id": .objectID(ObjectID()), "name": "t", "desc": "", "opt": ["level": "Forced"]],
                    ],
                ]
            ],
        ]
        var tally = RuleTally()
        let normalised = ChannelNormaliser().normalise(channel, tally: &tally)
        let area = normalised[path: "areas"]?.arrayValue?.first?.documentValue
        let subjects = area?["subjects"]?.arrayValue?.compactMap(\.documentValue) ?? []
        #expect(normalised["access"] == [])
        #expect(area?["access"] == [])
        #expect(subjects.allSatisfy { $0["access"] == [] && $0["tags"] == [] })
        #expect(subjects.first?[path: "opt.level"] == "")
        #expect(subjects.first?[path: "opt.distribution"] == "Push")
        #expect(subjects.last?[path: "opt.distribution"] == nil)
        #expect(tally.count(.accessAdded) == 4)
        #expect(tally.count(.tagsAdded) == 2)
        #expect(tally.count(.levelAdded) == 1)
        #expect(tally.count(.distributionUnknown) == 1)
        #expect(tally.count(.distributionMissing) == 1)
    }

    @Test(arguments: [
        (BSONValue.int64(1_510_651_260_123), Int64(1_510_651_260_123)),
        (.double(1_510_651_260_123), 1_510_651_260_123),
        (.int32(1_510_651_260), 1_510_651_260_000),
        (.int64(1_510_651_260), 1_510_651_260_000),
        (.double(1_510_651_260.123), 1_510_651_260_123),
        (.datetime(1_510_651_260_123), 1_510_651_260_123),
        (.string("1510651260123"), 1_510_651_260_123),
    ])
    func timestampsBecomeInt64Milliseconds(stored: BSONValue, milliseconds: Int64) {
        var tally = RuleTally()
        let message = MessageNormaliser(knownTopicKeys: nil).normalise(
            ["_id": .objectID(ObjectID()), "timestamp": stored], tally: &tally)
        #expect(message["timestamp"] == .int64(milliseconds))
    }

    @Test func missingMsiKeyIsTakenFromIDAndTheMessageIsMarkedImported() {
        let id = ObjectID()
        var tally = RuleTally()
        let message = MessageNormaliser(knownTopicKeys: nil).normalise(
            [
                "_id": .string(id.hex), "title": "t", "sender": "Super User", "timestamp": .int64(1_600_000_000_000),
                "flavour": "vanilla",
            ], tally: &tally)
        #expect(message["_id"] == .objectID(id))
        #expect(message["msi_key"] == .objectID(id))
        #expect(message["sender"] == "Super User")
        #expect(message["flavour"] == "vanilla")
        #expect(message["relay"] == ["state": "imported"])
        #expect(RelayState(message: message)?.status == .imported)
        #expect(message.keys.first == "_id")
        #expect(tally.count(.msiKeyFromID) == 1)
        #expect(tally.count(.legacySenderKept) == 1)
        #expect(tally.count(.messageUnknownFieldsKept) == 1)
        #expect(tally.unknownFields == ["flavour": 1])
    }

    private func topicKeys(_ channel: BSONDocument) -> [String] {
        (channel["areas"]?.arrayValue ?? []).flatMap { area in
            (area.documentValue?["subjects"]?.arrayValue ?? []).compactMap {
                $0.documentValue?["topic_key"]?.stringValue
            }
        }
    }
}
