import FakeFCM
@testable import Curl
import Foundation
import Testing

@Suite("HTTP client on libcurl")
struct HTTPClientTests {
    @Test func postReturnsStatusHeadersAndBody() async throws {
        try await FakeFCM.with { fake in
            try await withHTTPClient { http in
                let body = Array("{\"hello\": \"wörld\"}".utf8)
                let response = try await http.post(
                    url: fake.baseURL + "/echo",
                    headers: [HTTPHeader("X-Relay-Test", "one two"), HTTPHeader("Content-Type", "application/json")],
                    body: body
                )
                #expect(response.status == 200)
                #expect(response.body == body)
                #expect(response.header("x-relay-test") == "one two")
                #expect(response.header("Content-Type") == "application/octet-stream")
                #expect(response.header("Content-Length") == "\(body.count)")
                #expect(response.httpVersion == "HTTP/1.1")
            }
        }
    }

    @Test func anErrorStatusIsAResponseNotAnError() async throws {
        try await FakeFCM.with { fake in
            try await withHTTPClient { http in
                let response = try await http.post(url: fake.baseURL + "/echo?status=503", body: Array("x".utf8))
                #expect(response.status == 503)
                let missing = try await http.get(url: fake.baseURL + "/nowhere")
                #expect(missing.status == 404)
            }
        }
    }

    @Test func aKeptAliveConnectionIsReusedForTheNextRequest() async throws {
        try await FakeFCM.with { fake in
            try await withHTTPClient(configuration: .init(threads: 1)) { http in
                let first = try await http.post(url: fake.baseURL + "/echo", body: Array("1".utf8))
                let second = try await http.post(url: fake.baseURL + "/echo", body: Array("2".utf8))
                let third = try await http.post(url: fake.baseURL + "/echo?status=500", body: Array("3".utf8))
                #expect(!first.reusedConnection)
                #expect(second.reusedConnection)
                #expect(third.reusedConnection)
                #expect(third.status == 500 && third.body == Array("3".utf8))
            }
        }
    }

    @Test func aLargeBodyTravelsWholeBothWays() async throws {
        try await FakeFCM.with { fake in
            try await withHTTPClient { http in
                let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
                let response = try await http.post(url: fake.baseURL + "/echo", body: body)
                #expect(response.status == 200)
                #expect(response.body == body)
            }
        }
    }

    @Test func manyConcurrentRequestsShareTheHandlePool() async throws {
        try await FakeFCM.with { fake in
            try await withHTTPClient(configuration: .init(threads: 3)) { http in
                let bodies = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                    for index in 0..<40 {
                        group.addTask {
                            try await http.post(url: fake.baseURL + "/echo", body: Array("\(index)".utf8)).body
                        }
                    }
                    return try await group.reduce(into: Set<[UInt8]>()) { $0.insert($1) }
                }
                #expect(bodies == Set((0..<40).map { Array("\($0)".utf8) }))
            }
        }
    }

    @Test func aSlowServerIsATimeout() async throws {
        try await FakeFCM.with { fake in
            try await withHTTPClient(configuration: .init(requestTimeout: .milliseconds(300))) { http in
                let error = await #expect(throws: CurlError.self) {
                    try await http.post(url: fake.baseURL + "/echo?delay_ms=3000", body: [])
                }
                #expect(error?.code == .timeout)
                #expect(error?.curlCode == 28)
            }
        }
    }

    @Test func aRefusedConnectionIsConnectFailedWithCurlsMessage() async throws {
        let fake = try await FakeFCM.start()
        let closedURL = fake.baseURL + "/echo"
        await fake.stop()
        try await withHTTPClient { http in
            let error = await #expect(throws: CurlError.self) {
                try await http.post(url: closedURL, body: [])
            }
            #expect(error?.code == .connectFailed)
            #expect(error?.message.isEmpty == false)
        }
    }

    @Test func aHeaderWithALineBreakIsRefusedBeforeSending() async throws {
        try await withHTTPClient { http in
            let error = await #expect(throws: CurlError.self) {
                try await http.post(
                    url: "http://127.0.0.1:9/echo",
                    headers: [HTTPHeader("X-Evil", "a\r\nInjected: yes")],
                    body: []
                )
            }
            #expect(error?.code == .invalidRequest)
        }
    }

    /// Under AddressSanitizer (`make leakcheck`) this fails if the handle reaches a former request's header list or
    /// collector: each request frees them, the next has fewer headers, and the last cleanup closes a live connection.
    @Test func aHandleKeepsNoPointerToAFormerRequestsStorage() async throws {
        try await FakeFCM.with { fake in
            var handle: CurlHandle? = try CurlHandle()
            for (index, count) in [6, 1, 0].enumerated() {
                let headers = (0..<count).map { HTTPHeader("X-Relay-Test-\($0)", String(repeating: "v", count: 64)) }
                let body = Array("request \(index)".utf8)
                let response = try #require(handle).perform(
                    CurlRequest(
                        method: .post, url: fake.baseURL + "/echo", headers: headers, body: body,
                        connectTimeout: .seconds(5), timeout: .seconds(30), maxResponseBytes: 1 << 20))
                #expect(response.status == 200 && response.body == body)
                #expect(response.reusedConnection == (index > 0))
                #expect((0..<6).filter { response.header("X-Relay-Test-\($0)") != nil } == Array(0..<count))
            }
            handle = nil  // curl_easy_cleanup with the kept-alive connection still open
            #expect(handle == nil)
        }
    }

    @Test func aClientThatWasShutDownRefusesRequests() async throws {
        let http = CurlClient()
        try await http.shutdown()
        try await http.shutdown()  // a second shutdown is harmless
        let error = await #expect(throws: CurlError.self) {
            try await http.post(url: "http://127.0.0.1:9/", body: [])
        }
        #expect(error?.code == .shutDown)
    }

    @Test func aCallersCancellationIsReportedAsCancellationNotShutDown() async throws {
        try await FakeFCM.with { fake in
            try await withHTTPClient(configuration: .init(threads: 1)) { http in
                // Cancelled before it asks: the pool withdraws the job, so nothing is sent (port 9 would refuse).
                let cancelled = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await http.post(url: "http://127.0.0.1:9/", body: [])
                }
                let error = await #expect(throws: CurlError.self) { try await cancelled.value }
                #expect(error?.code == .cancelled)
                // The client is not shut down: the next caller is served.
                let response = try await http.post(url: fake.baseURL + "/echo", body: Array("after".utf8))
                #expect(response.status == 200)
            }
        }
    }
}
