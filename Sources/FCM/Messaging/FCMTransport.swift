import Logging

/// One authorised request to FCM: a bearer token from the service account, and on a 401 one token renewal and
/// one retry. Sending and the topic subscription calls both go through it, so the token rules live in one place.
struct FCMTransport: Sendable {
    /// The request: its method, and the JSON body of a POST.
    enum Method: Sendable {
        case get
        case post([UInt8])
        case delete
    }

    let tokens: any AccessTokenSource
    let httpClient: CurlClient
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
        do {
            switch method {
            case .get:
                return (token, try await httpClient.get(url: url, headers: headers))
            case .post(let body):
                headers.append(HTTPHeader("Content-Type", "application/json; charset=UTF-8"))
                return (token, try await httpClient.post(url: url, headers: headers, body: body))
            case .delete:
                return (token, try await httpClient.delete(url: url, headers: headers))
            }
        } catch let error as CurlError {
            throw FCMError(transport: error)
        }
    }
}
