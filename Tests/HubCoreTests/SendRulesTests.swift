import DAO
@testable import HubCore
import Mongo
import MongoTestSupport
import Testing

/// The send rules of a message's own fields, in their one home (`MessageService+SendRules`), which POST /message and
/// the portal's send form both reach.
@Suite("Sending: the rules of a message's fields")
struct SendRulesTests {
    static func submission(
        title: String = "Library", desc: String = "Closed today", message: String = "All day.",
        topicKey: String = "a-b-c",
        distribution: Distribution = .alert
    ) -> MessageService.Submission {
        MessageService.Submission(
            title: title, desc: desc, message: message, topicKey: topicKey,
            distribution: distribution)
    }

    @Test func eachFieldMayBeAsLongAsItsLimitAndNoLonger() throws {
        for field in MessageField.allCases {
            var submission = Self.submission()
            Self.set(field, String(repeating: "x", count: field.maxLength), in: &submission)
            #expect(submission.refusals.isEmpty, "\(field)")
            Self.set(field, String(repeating: "x", count: field.maxLength + 1), in: &submission)
            #expect(submission.refusals.count == 1)
            let refusal = try #require(submission.refusals.first)
            #expect(refusal.code == .fieldTooLong && refusal.field == field, "\(field)")
            #expect(refusal.message == "the field \"\(field.rawValue)\" is longer than \(field.maxLength) characters")
        }
        #expect(MessageField.title.maxLength == 500 && MessageField.desc.maxLength == 500)
        #expect(MessageField.message.maxLength == 1_500 && MessageField.topicKey.maxLength == 200)
    }

    @Test func lengthsCountCharactersAsPeopleSeeThemNotBytes() {
        // 500 family emoji: 500 characters, 12,500 bytes of UTF-8.
        let family = String(repeating: "👨‍👩‍👧‍👦", count: 500)
        #expect(Self.submission(title: family).refusals.isEmpty)
        #expect(Self.submission(title: family + "x").refusals.map(\.code) == [.fieldTooLong])
    }

    @Test func anAlertNeedsItsNotificationTextAndAnInformationMessageDoesNot() {
        let alert = Self.submission(desc: "").refusals
        #expect(alert.map(\.code) == [.alertNeedsDesc] && alert.first?.field == .desc)
        #expect(
            alert.first?.message
                == "the field \"desc\" must not be empty for an Alert: it is the push notification's body")
        #expect(Self.submission(desc: "", distribution: .information).refusals.isEmpty)
        // An empty title or message is the legacy API's to take; a form asks for them itself.
        #expect(Self.submission(title: "", message: "").refusals.isEmpty)
    }

    @Test func everyBrokenRuleIsListedInFieldOrderForAForm() {
        let refusals = Self.submission(
            title: String(repeating: "t", count: 501), desc: "",
            message: String(repeating: "m", count: 1_501), topicKey: ""
        ).refusals
        #expect(refusals.map(\.code) == [.fieldTooLong, .fieldTooLong, .emptyField, .alertNeedsDesc])
        #expect(refusals.map(\.field) == [.title, .message, .topicKey, .desc])
        #expect(refusals[2].message == "the field \"topic_key\" must not be empty")
    }

    @Test func sendAppliesTheFieldRulesBeforeLookingForTheSubjectAndStoresNothing() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let messages = HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4).messages
            let sender = Identity(name: "root", role: .admin, kind: .user)
            let tooLong = await #expect(throws: SendRefusal.self) {
                _ = try await messages.send(Self.submission(message: String(repeating: "m", count: 1_501)), as: sender)
            }
            #expect(tooLong?.code == .fieldTooLong && tooLong?.field == .message)
            let noTopic = await #expect(throws: SendRefusal.self) {
                _ = try await messages.send(Self.submission(topicKey: ""), as: sender)
            }
            #expect(noTopic?.code == .emptyField && noTopic?.field == .topicKey)
            // Within the rules, the subject's come next: this topic has none.
            let unknown = await #expect(throws: SendRefusal.self) {
                _ = try await messages.send(Self.submission(), as: sender)
            }
            #expect(unknown?.code == .topicNotFound)
            #expect(try await database.collection(CollectionName.message).countDocuments() == 0)
        }
    }

    private static func set(_ field: MessageField, _ value: String, in submission: inout MessageService.Submission) {
        switch field {
        case .title: submission.title = value
        case .desc: submission.desc = value
        case .message: submission.message = value
        case .topicKey: submission.topicKey = value
        }
    }
}
