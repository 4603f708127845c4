/// An HTTP client on libcurl: `CurlClient` (one blocking request a thread, for the token endpoint) or
/// `CurlMultiClient` (many requests multiplexed over HTTP/2 from one thread, for FCM).
public protocol CurlHTTPClient: Sendable {
    /// Sends `method url` with `headers` and `body` (empty for GET and DELETE); the response, whatever its status.
    /// - Throws: `CurlError` (`.timeout`, `.connectFailed`, `.tls`, `.invalidRequest`, `.shutDown`, `.cancelled`,
    ///   `.other`) when no response arrived.
    func send(_ method: CurlMethod, url: String, headers: [HTTPHeader], body: [UInt8]) async throws -> CurlResponse
}

extension CurlHTTPClient {
    /// Sends a POST request and returns the response, whatever its status.
    /// - Throws: `CurlError`, as `send(_:url:headers:body:)`.
    public func post(url: String, headers: [HTTPHeader] = [], body: [UInt8]) async throws -> CurlResponse {
        try await send(.post, url: url, headers: headers, body: body)
    }

    /// Sends a GET request and returns the response, whatever its status.
    /// - Throws: `CurlError`, as `send(_:url:headers:body:)`.
    public func get(url: String, headers: [HTTPHeader] = []) async throws -> CurlResponse {
        try await send(.get, url: url, headers: headers, body: [])
    }

    /// Sends a DELETE request (no body) and returns the response, whatever its status.
    /// - Throws: `CurlError`, as `send(_:url:headers:body:)`.
    public func delete(url: String, headers: [HTTPHeader] = []) async throws -> CurlResponse {
        try await send(.delete, url: url, headers: headers, body: [])
    }
}
