import Foundation
@testable import MSIKit
import Testing

@Suite("MSIKitError")
struct MSIKitErrorTests {
    @Test func namedHubCodesAreTheirStatusAndCode() {
        #expect(MSIKitError.Code.forcedSubscription == .hub(status: 409, code: "forced_subscription"))
        #expect(MSIKitError.Code.topicNotFound != .hub(status: 404, code: "message_not_found"))
        #expect(MSIKitError.Code.unauthenticated.hubStatus == 401)
        #expect(MSIKitError.Code.network.hubStatus == nil)
    }

    @Test func theHubsErrorBodyGivesTheCodeAndMessage() {
        let body = Data(#"{"error": {"code": "forced_subscription", "message": "Forced topics stay."}}"#.utf8)
        let error = HubConnection.refusal(status: 409, body: body)
        #expect(error.code == .forcedSubscription)
        #expect(error.message == "Forced topics stay.")
        #expect(error.description == "MSIKitError(hub(409, forced_subscription))")
    }

    @Test func aBodyWithoutTheErrorShapeKeepsTheStatus() {
        let error = HubConnection.refusal(status: 502, body: Data("<html>Bad gateway</html>".utf8))
        #expect(error.code == .hub(status: 502, code: ""))
    }
}
