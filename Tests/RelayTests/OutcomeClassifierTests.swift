import FCM
@testable import Relay
import Testing

@Suite("Sorting FCM's answers")
struct OutcomeClassifierTests {
    /// A gate on a clock that stands still at 10 s.
    static func classifier() -> OutcomeClassifier {
        OutcomeClassifier(gate: RelayGate(concurrency: 4, now: { 10_000 }))
    }

    static func error(_ code: FCMError.Code, retryable: Bool, retryAfter: Duration? = nil) -> FCMError {
        FCMError(code: code, message: "\(code)", isRetryable: retryable, retryAfter: retryAfter)
    }

    @Test func anAnswerIsSentAndLeavesTheGateOpen() async throws {
        let classifier = Self.classifier()
        let ticket = try #require(await classifier.gate.admit())
        guard case .sent("projects/p/messages/1") = classifier.classify(.success("projects/p/messages/1"), of: ticket)
        else { Issue.record("not sent"); return }
        #expect(classifier.gate.pause() == nil)
    }

    @Test func anOverloadedFCMIsARetryAfterThePauseItStartsForTheProject() async throws {
        let classifier = Self.classifier()
        let ticket = try #require(await classifier.gate.admit())
        let outcome = classifier.classify(
            Result<String, FCMError>.failure(
                Self.error(.unavailable, retryable: true, retryAfter: .seconds(3))), of: ticket)
        guard case .retryAfter(let error, let pauseEnd) = outcome else { Issue.record("\(outcome)"); return }
        #expect(error.code == .unavailable && pauseEnd == 13_000)
        #expect(classifier.gate.pause() == .seconds(3))
    }

    @Test func aRetryableErrorThatPausesNothingIsARetryWithoutAPause() async throws {
        let classifier = Self.classifier()
        let ticket = try #require(await classifier.gate.admit())
        let outcome = classifier.classify(
            Result<String, FCMError>.failure(Self.error(.internal, retryable: true)),
            of: ticket)
        guard case .retryAfter(_, let pauseEnd) = outcome else { Issue.record("\(outcome)"); return }
        #expect(pauseEnd == nil)
        #expect(classifier.gate.pause() == nil)
    }

    @Test func aRefusalIsFailedAndAGoneRegistrationIsUnregistered() async throws {
        let classifier = Self.classifier()
        let refused = try #require(await classifier.gate.admit())
        let outcome = classifier.classify(
            Result<String, FCMError>.failure(Self.error(.invalidArgument, retryable: false)),
            of: refused)
        guard case .failed(let error) = outcome, error.code == .invalidArgument else {
            Issue.record("\(outcome)"); return
        }
        let gone = try #require(await classifier.gate.admit())
        let unregistered = classifier.classify(
            Result<String, FCMError>.failure(Self.error(.unregistered, retryable: false)),
            of: gone)
        guard case .unregistered = unregistered else { Issue.record("\(unregistered)"); return }
        #expect(classifier.gate.pause() == nil)
    }
}
