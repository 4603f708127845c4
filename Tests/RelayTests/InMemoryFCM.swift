import FCM
import Foundation
import Synchronization

/// FCM in memory for the workers' tests: records every request it is sent (with its target read from the body) and
/// answers from a script, with no HTTP. A token can be given an answer for good (`answer(token:with:)`: a phone
/// uninstalled); otherwise the next answers queued (`answerNext`) go to the next requests, whatever their target, and
/// a request with none queued is taken (`projects/test/messages/<n>`).
final class InMemoryFCM: FCMSending {
    /// One request as it arrived.
    struct Sent: Sendable {
        var request: FCMRequest
        var topic: String?
        var token: String?
        var condition: String?
        /// The message's data, every value a string.
        var data: [String: String]
        /// The answer it got.
        var answer: Result<String, FCMError>

        var component: FCMComponent { request.component }
    }

    private struct State {
        var sent: [Sent] = []
        var queued: [Result<String, FCMError>] = []
        var byToken: [String: Result<String, FCMError>] = [:]
    }

    private let state = Mutex(State())

    /// Every request so far, in the order they came.
    var sent: [Sent] { state.withLock { $0.sent } }

    /// The tokens of the token sends so far, in order.
    var tokens: [String] { sent.compactMap(\.token) }

    /// Queues `answers` for the next requests (of any target without an answer of its own).
    func answerNext(_ answers: Result<String, FCMError>...) {
        state.withLock { $0.queued += answers }
    }

    /// Answers every request to `token` with `answer` from now on.
    func answer(token: String, with answer: Result<String, FCMError>) {
        state.withLock { $0.byToken[token] = answer }
    }

    func send(_ request: FCMRequest) async throws -> String {
        let message =
            (try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])?["message"]
            as? [String: Any] ?? [:]
        let token = message["token"] as? String
        let answer = state.withLock { state in
            let answer: Result<String, FCMError>
            if let token, let scripted = state.byToken[token] {
                answer = scripted
            } else if !state.queued.isEmpty {
                answer = state.queued.removeFirst()
            } else {
                answer = .success("projects/test/messages/\(state.sent.count + 1)")
            }
            state.sent.append(
                Sent(
                    request: request, topic: message["topic"] as? String, token: token,
                    condition: message["condition"] as? String,
                    data: message["data"] as? [String: String] ?? [:], answer: answer))
            return answer
        }
        return try answer.get()
    }
}

extension FCMError {
    /// 404 `UNREGISTERED`: the token is gone.
    static let unregistered = FCMError(
        code: .unregistered, httpStatus: 404, status: "NOT_FOUND", fcmErrorCode: "UNREGISTERED",
        message: "Requested entity was not found.", isRetryable: false)

    /// 500 `INTERNAL`: worth retrying, and no pause of the project.
    static let internalError = FCMError(
        code: .internal, httpStatus: 500, status: "INTERNAL", message: "Internal error.", isRetryable: true)

    /// 503 `UNAVAILABLE`, with FCM's `Retry-After` when given.
    static func unavailable(retryAfter: Duration? = nil) -> FCMError {
        FCMError(
            code: .unavailable, httpStatus: 503, status: "UNAVAILABLE", message: "The service is unavailable.",
            isRetryable: true, retryAfter: retryAfter)
    }

    /// 429 `QUOTA_EXCEEDED` with FCM's `Retry-After`.
    static func quotaExceeded(retryAfter: Duration) -> FCMError {
        FCMError(
            code: .quotaExceeded, httpStatus: 429, status: "RESOURCE_EXHAUSTED", fcmErrorCode: "QUOTA_EXCEEDED",
            message: "Quota exceeded.", isRetryable: true, retryAfter: retryAfter)
    }
}
