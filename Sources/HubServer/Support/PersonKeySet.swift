import Curl
import HubCore

/// Where the person assertions' JWKS is read from (`PERSON_ASSERTION_JWKS`): a file through HubCore's loader, an
/// https URL with a short-lived libcurl client (fetched at most every few minutes, so none is kept between).
enum PersonKeySet {
    /// The loader the composition root gives `PersonAssertionVerifier`.
    static let loader: PersonAssertionVerifier.KeySetLoader = { source in
        guard case .url(let url) = source else { return try await PersonAssertionVerifier.fileLoader(source) }
        let configuration = CurlClient.Configuration(
            threads: 1, connectTimeout: .seconds(5), requestTimeout: .seconds(10),
            maxResponseBytes: 1 << 20)
        let response = try await withHTTPClient(configuration: configuration) { try await $0.get(url: url) }
        guard response.status == 200 else {
            throw AssertionRefusal(.invalidAssertion, "the keys to verify assertions could not be fetched")
        }
        return String(decoding: response.body, as: UTF8.self)
    }
}
