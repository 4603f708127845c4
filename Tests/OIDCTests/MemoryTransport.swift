import Foundation
import NIOConcurrencyHelpers
import OIDC

/// An in-memory provider for `OIDCProvider`'s rules without I/O: answers from what the test sets, counts each GET,
/// records each token request (its fields and Basic credentials), and may wait before answering so that concurrent
/// callers pile up behind one fetch.
final class MemoryTransport: OIDCTransport {
    struct State {
        var documents: [String: (Int, [UInt8])] = [:]
        var gets: [String: Int] = [:]
        var tokenAnswer: (Int, [UInt8]) = (400, Array(#"{"error": "invalid_grant"}"#.utf8))
        var tokenRequests: [(fields: [String: String], basic: (user: String, password: String)?)] = []
        var failing = false
    }

    let state = NIOLockedValueBox(State())
    let delay: Duration

    init(delay: Duration = .zero) { self.delay = delay }

    func set(_ url: String, status: Int = 200, json: String) {
        state.withLockedValue { $0.documents[url] = (status, Array(json.utf8)) }
    }

    func gets(_ url: String) -> Int { state.withLockedValue { $0.gets[url] ?? 0 } }

    func get(_ url: String) async throws -> (status: Int, body: [UInt8]) {
        if delay > .zero { try await Task.sleep(for: delay) }
        return try state.withLockedValue { state in
            state.gets[url, default: 0] += 1
            if state.failing { throw URLError(.cannotConnectToHost) }
            let (status, body) = state.documents[url] ?? (404, [])
            return (status, body)
        }
    }

    func postForm(_ url: String, fields: [(String, String)], basicCredentials: (user: String, password: String)?)
        async throws -> (status: Int, body: [UInt8])
    {
        state.withLockedValue { state in
            state.tokenRequests.append((Dictionary(fields, uniquingKeysWith: { $1 }), basicCredentials))
            return state.tokenAnswer
        }
    }
}
