import Curl
import Foundation
import OIDC

/// The OpenID sign-in's HTTP over libcurl: a short-lived client a request (sign-ins are rare, and the documents are
/// fetched at most once an hour), small bodies, short timeouts.
struct CurlOIDCTransport: OIDCTransport {
    private static let configuration = CurlClient.Configuration(
        threads: 1, connectTimeout: .seconds(5), requestTimeout: .seconds(10), maxResponseBytes: 1 << 20)

    func get(_ url: String) async throws -> (status: Int, body: [UInt8]) {
        let response = try await withHTTPClient(configuration: Self.configuration) {
            try await $0.get(url: url, headers: [HTTPHeader("Accept", "application/json")])
        }
        return (response.status, response.body)
    }

    func postForm(_ url: String, fields: [(String, String)], basicCredentials: (user: String, password: String)?)
        async throws -> (status: Int, body: [UInt8])
    {
        var headers = [
            HTTPHeader("Content-Type", "application/x-www-form-urlencoded"), HTTPHeader("Accept", "application/json"),
        ]
        if let basicCredentials {
            let pair = Data("\(basicCredentials.user):\(basicCredentials.password)".utf8).base64EncodedString()
            headers.append(HTTPHeader("Authorization", "Basic \(pair)"))
        }
        let body = FormEncoding.body(fields)
        let response = try await withHTTPClient(configuration: Self.configuration) {
            try await $0.post(url: url, headers: headers, body: body)
        }
        return (response.status, response.body)
    }
}
