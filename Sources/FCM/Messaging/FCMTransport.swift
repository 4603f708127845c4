import Curl
import Logging

/// One authorised request to FCM: a bearer token from the service account, and on a 401 one token renewal and
/// one retry. Sending and the topic subscription calls both go through it, so the token rules live in one place,
/// and both are multiplexed over the same HTTP/2 connections (`CurlMultiClient`).
struct FCMTransport: Sendable {
    /// The request: its method, and the JSON body of a POST.
    enum Method: Sendable {
        case get
        case post([UInt8])
        case delete
    }

    let tokens: any AccessTokenSource
    let httpClient: any CurlHTTPClient
    let logger: Logger

    /// FCM's answer to `method url`, whatever its status, except that a first 401 renews the token and asks
    /// again (the token was revoked or expired early); a second 401 is returned.
    /// - Throws: `FCMError` when no access token can be had (`.unauthenticated`, `.unavailable`,
    ///   `.connectionFailed`) or the request got no answer (`.timeout`, `.connectionFailed`, `.other`).
    func perform(_ method: Method, url: String, metadata: Logger.Metadata = [:]) async throws -> CurlResponse {
        let (token, response) = try await once(method, url: url)
        guard response.status == 401 else { return response }
        logger.info("fcm answered 401; renewing the access token", metadata: metadata)
        await tokens.invalidate(token: token)
        return try await once(method, url: url).response
    }

    private func once(_ method: Method, url: String) async throws -> (token: String, response: CurlResponse) {
        let token: String
        do {
            token = try await tokens.accessToken()
        } catch let error as AccessTokenError {
            throw FCMError(token: error)
        }
        var headers = [HTTPHeader("Authorization", "Bearer \(token)")]
        let request: (CurlMethod, [UInt8])
        switch method {
        case .get: request = (.get, [])
        case .post(let body):
            headers.append(HTTPHeader("Content-Type", "application/json; charset=UTF-8"))
            request = (.post, body)
        case .delete: request = (.delete, [])
        }
        if Task.isCancelled {
            throw FCMError(
                transport: CurlError(code: .cancelled, message: "the request was cancelled before it was sent"))
        }
        // Once sent, a request runs to its end whatever happens to the caller's task: FCM may deliver a message
        // whose request was abandoned, and the relay must learn the outcome to record it (so a stopping hub hands
        // back exactly what it has not sent). An unstructured task does not inherit the cancellation.
        let task = Task { [httpClient, headers] in
            try await httpClient.send(request.0, url: url, headers: headers, body: request.1)
        }
        do {
            return (token, try await task.value)
        } catch let error as CurlError {
            throw FCMError(transport: error)
        }
    }
}
