import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The transport to the hub: builds requests on its base URL, sends them with URLSession, and turns every failure
/// into an `MSIKitError` (the hub's `{"error": {"code", "message"}}` body into `.hub(status:code:)`).
struct HubConnection: Sendable {
    /// The hub's base URL, without a trailing "/".
    let base: String
    private let session: URLSession
    /// Sent as `X-App-Key` when registering, if the hub asks for one (`DEVICE_REGISTRATION_KEY`).
    let appKey: String?

    init(hub: URL, appKey: String?) {
        var base = hub.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.appKey = appKey
        let configuration = URLSessionConfiguration.ephemeral
        // The library keeps the cube's ETag itself; a URL cache would turn the hub's 304 into a 200 behind its back.
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 30
        session = URLSession(configuration: configuration)
    }

    /// A response that was a success (2xx) or a 304.
    struct Response: Sendable {
        var status: Int
        var body: Data
        var headers: [String: String]

        /// A header's value, matched case-insensitively.
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// Sends a request to `path` (segments, each percent-encoded here) and returns a 2xx or 304 response.
    /// - Throws: `.network`, `.cancelled`, or `.hub(status:code:)` for any other status.
    func send(
        _ method: String, _ path: [String], query: [URLQueryItem] = [], headers: [String: String] = [:],
        body: Data? = nil
    ) async throws(MSIKitError) -> Response {
        let request = try makeRequest(method, path, query: query, headers: headers, body: body)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            if error is CancellationError || (error as? URLError)?.code == .cancelled {
                throw MSIKitError(.cancelled, "The request was cancelled.", underlying: error)
            }
            throw MSIKitError(
                .network, "The hub could not be reached: \(error.localizedDescription)", underlying: error)
        }
        guard let http = response as? HTTPURLResponse else {
            throw MSIKitError(.invalidResponse, "The hub's answer was not HTTP.")
        }
        let status = http.statusCode
        guard (200..<300).contains(status) || status == 304 else {
            throw Self.refusal(status: status, body: data)
        }
        var headers: [String: String] = [:]
        for case (let name as String, let value as String) in http.allHeaderFields { headers[name] = value }
        return Response(status: status, body: data, headers: headers)
    }

    /// Sends a request with an optional JSON body and decodes the JSON answer.
    /// - Throws: as `send`, and `.invalidResponse` when the answer is not the expected JSON.
    func json<Answer: Decodable>(
        _ method: String, _ path: [String], query: [URLQueryItem] = [], headers: [String: String] = [:],
        body: (some Encodable)? = Optional<Empty>.none, as type: Answer.Type = Answer.self
    ) async throws(MSIKitError) -> Answer {
        try await exchange(method, path, query: query, headers: headers, body: body, as: type).answer
    }

    /// As `json`, with the answer's status (where 200 and 201 mean different things, as for `POST /device`).
    /// - Throws: as `json`.
    func exchange<Answer: Decodable>(
        _ method: String, _ path: [String], query: [URLQueryItem] = [], headers: [String: String] = [:],
        body: (some Encodable)? = Optional<Empty>.none, as type: Answer.Type = Answer.self
    ) async throws(MSIKitError) -> (answer: Answer, status: Int) {
        var headers = headers
        var data: Data?
        if let body {
            headers["Content-Type"] = "application/json"
            do {
                data = try JSONEncoder().encode(body)
            } catch {
                throw MSIKitError(.invalidArgument, "The request could not be encoded.", underlying: error)
            }
        }
        let response = try await send(method, path, query: query, headers: headers, body: data)
        return (try Self.decode(Answer.self, from: response.body), response.status)
    }

    /// Decodes a JSON answer.
    /// - Throws: `.invalidResponse`.
    static func decode<Answer: Decodable>(_ type: Answer.Type, from data: Data) throws(MSIKitError) -> Answer {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw MSIKitError(.invalidResponse, "The hub's answer could not be read: \(error)", underlying: error)
        }
    }

    /// The value of an `Authorization` header for a device's secret.
    static func bearer(_ secret: String) -> [String: String] { ["Authorization": "Bearer \(secret)"] }

    /// A JSON body with no fields, the default of `json(_:_:body:)`.
    struct Empty: Codable, Sendable {}

    private func makeRequest(
        _ method: String, _ path: [String], query: [URLQueryItem], headers: [String: String], body: Data?
    ) throws(MSIKitError) -> URLRequest {
        let encodedPath = path.map { segment in
            segment.addingPercentEncoding(withAllowedCharacters: Self.segmentCharacters) ?? segment
        }.joined(separator: "/")
        guard var components = URLComponents(string: base + "/" + encodedPath) else {
            throw MSIKitError(.invalidArgument, "The hub URL is not valid.")
        }
        if !query.isEmpty { components.queryItems = query }
        guard let url = components.url else {
            throw MSIKitError(.invalidArgument, "The request URL is not valid.")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        return request
    }

    /// The characters a path segment keeps unencoded: unreserved ones only, so "/" and "?" in input stay inside it.
    private static let segmentCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Maps a refusal to `.hub(status:code:)`, with the hub's message when its body has the error shape.
    static func refusal(status: Int, body: Data) -> MSIKitError {
        struct Body: Decodable {
            struct Detail: Decodable {
                var code: String
                var message: String?
            }
            var error: Detail
        }
        if let detail = try? JSONDecoder().decode(Body.self, from: body).error {
            return MSIKitError(.hub(status: status, code: detail.code), detail.message ?? "The hub answered \(status).")
        }
        return MSIKitError(.hub(status: status, code: ""), "The hub answered \(status).")
    }
}
