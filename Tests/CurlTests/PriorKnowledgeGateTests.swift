import Testing

@testable import Curl

@Suite("The gate that keeps h2c requests to the connections probes proved (libcurl before 8.0)")
struct PriorKnowledgeGateTests {
    /// Requests 0..<count to one origin asking for prior knowledge, sharing `continuation` (the gate never resumes).
    static func submissions(_ count: Int, continuation: CheckedContinuation<CurlResponse, any Error>) -> [Submission] {
        (0..<count).map { id in
            var request = CurlRequest(
                method: .post, url: "http://127.0.0.1:9/v1/projects/p/messages:send", headers: [],
                body: [], connectTimeout: .seconds(1), timeout: .seconds(1),
                maxResponseBytes: 1_024)
            request.version = .http2PriorKnowledge
            return Submission(id: UInt64(id), request: request, continuation: continuation)
        }
    }

    @Test func probesOpenTheConnectionsAndTheWaitingRequestsRideThemOldestFirst() async throws {
        // The gate is synchronous; the continuation is only there to build submissions, and is resumed once.
        let _: CurlResponse? = try? await withCheckedThrowingContinuation { continuation in
            var gate = PriorKnowledgeGate(streams: 3, connections: 2)
            let all = Self.submissions(1_000, continuation: continuation)
            let admitted = all.compactMap { gate.admit($0) }
            // Two probes, each on a fresh connection; the other 998 wait.
            #expect(admitted.map(\.id) == [0, 1] && admitted.allSatisfy { $0.request.freshConnect })
            #expect(admitted.allSatisfy { $0.ticket?.probe == true } && gate.isHolding)
            // The first probe answered over HTTP/2: three requests ride its connection, the oldest waiting.
            let riders = gate.finished(admitted[0].ticket!, .http2)
            #expect(riders.map(\.id) == [2, 3, 4])
            #expect(riders.allSatisfy { $0.request.version == .http2OverTLS && !$0.request.freshConnect })
            // A waiting request is withdrawn (its caller cancelled); the others keep their order.
            #expect(gate.withdraw(5)?.id == 5 && gate.withdraw(5) == nil && gate.withdraw(3) == nil)
            // The second probe failed: a new probe takes its place, with the next waiting request.
            let next = gate.finished(admitted[1].ticket!, .other)
            #expect(next.map(\.id) == [6] && next[0].ticket?.probe == true)
            // A rider answered: one more rides in its place.
            let seventh = gate.finished(riders[0].ticket!, .http2)
            #expect(seventh.map(\.id) == [7])
            // The new probe answered: three more ride its connection; then each ending starts the next waiting
            // request, oldest first, until none waits.
            let started = gate.finished(next[0].ticket!, .http2)
            #expect(started.map(\.id) == [8, 9, 10])
            var inFlight = [riders[1], riders[2]] + seventh + started
            var order = started.map(\.id)
            while let done = inFlight.popLast() {
                let more = gate.finished(done.ticket!, .http2)
                #expect(more.count <= 1)
                order += more.map(\.id)
                inFlight += more
            }
            #expect(!gate.isHolding)
            #expect(order == (8..<1_000).map(UInt64.init))
            continuation.resume(throwing: CancellationError())
        }
    }

    @Test func requestsOverTLSOrWithoutPriorKnowledgePassStraightThrough() async throws {
        let _: CurlResponse? = try? await withCheckedThrowingContinuation { continuation in
            var gate = PriorKnowledgeGate(streams: 1, connections: 1)
            var submission = Self.submissions(1, continuation: continuation)[0]
            submission.request.version = .http2OverTLS
            #expect(gate.admit(submission)?.ticket == nil && gate.admit(submission)?.ticket == nil)
            #expect(!gate.isHolding)
            continuation.resume(throwing: CancellationError())
        }
    }
}
