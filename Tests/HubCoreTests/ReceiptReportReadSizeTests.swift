import DAO
@testable import HubCore
import Testing

/// How much of an audience one read of the reach report takes: enough, at the share not answered, to fill the page
/// and tell whether another follows, in whole spans between the audience's marks.
@Suite("Reach report read size")
struct ReceiptReportReadSizeTests {
    @Test func theReadGrowsAsTheShareNotAnsweredShrinksWithinItsBounds() {
        let span = ReachAudience.pageSpan
        // Nobody answered: one span holds a page of 100 and one more.
        #expect(ReceiptService.readSize(limit: 100, audience: 20_000, acknowledged: 0) == span)
        // Half answered: 101 silent devices need about 202 rows, and a fifth to spare.
        #expect(ReceiptService.readSize(limit: 100, audience: 20_000, acknowledged: 10_000) == 2 * span)
        // Nine in ten answered: about 1,212 rows.
        #expect(ReceiptService.readSize(limit: 100, audience: 20_000, acknowledged: 18_000) == 7 * span)
        // Everyone answered, or counts past the audience: never more than the scan limit.
        #expect(ReceiptService.readSize(limit: 500, audience: 20_000, acknowledged: 20_000) == ReceiptService.scanLimit)
        #expect(ReceiptService.readSize(limit: 100, audience: 100, acknowledged: 500) == ReceiptService.scanLimit)
        // No audience counted yet: one span.
        #expect(ReceiptService.readSize(limit: 100, audience: 0, acknowledged: 0) == span)
    }
}
