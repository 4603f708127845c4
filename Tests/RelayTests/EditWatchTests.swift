@testable import Relay
import Testing

@Suite("What a sender knows of its message's edits")
struct EditWatchTests {
    @Test func anEditCountAboveTheOneReadOrATellFromThisProcessMarksTheMessageChangedUntilItIsReadAgain() {
        let watch = EditWatch(seen: 2, since: 1_000)
        // The database is asked only once the message has been sent for a while, and not once it is known edited.
        #expect(!watch.isDue(at: 1_100, after: 250) && watch.isDue(at: 1_250, after: 250))
        watch.note(2)
        #expect(!watch.isChanged)
        watch.note(3)
        #expect(watch.isChanged && !watch.isDue(at: 2_000, after: 250))
        // Read again at edit 3: nothing new until another edit.
        watch.saw(3)
        #expect(!watch.isChanged && watch.seen == 3)
        watch.note(1)
        #expect(!watch.isChanged)
        watch.changed()
        #expect(watch.isChanged)
    }
}
