@testable import Curl
import FakeFCM
import FCM
import Foundation
import Logging
import NIOConcurrencyHelpers

/// A fake FCM, a service account it trusts (in a temp file) and an HTTP client: what most relay tests need.
struct FCMHarness {
    let fake: FakeFCM
    let testAccount: TestServiceAccount
    let account: ServiceAccount
    let http: CurlClient

    /// An FCM client for the harness's account, pointed at the fake.
    func fcmClient(
        mode: FCMClient.Mode = .send,
        tokens: (any AccessTokenSource)? = nil,
        logger: Logger = Logger(label: "relay-tests")
    ) -> FCMClient {
        FCMClient(
            account: account,
            httpClient: http,
            configuration: .init(endpoint: fake.baseURL, mode: mode),
            tokens: tokens,
            logger: logger
        )
    }

    /// A token provider for the harness's account, on `clock` when given.
    func tokenProvider(clock: TestClock? = nil) -> AccessTokenProvider {
        if let clock {
            return AccessTokenProvider(account: account, httpClient: http, now: { clock.now })
        }
        return AccessTokenProvider(account: account, httpClient: http)
    }

    /// Runs `body` with a started fake, a trusted account and a client; stops and removes them afterwards.
    static func with<Result: Sendable>(
        http configuration: CurlClient.Configuration = .init(),
        _ body: (FCMHarness) async throws -> Result
    ) async throws -> Result {
        try await FakeFCM.with { fake in
            let testAccount = try fake.makeServiceAccount()
            defer { testAccount.remove() }
            let account = try ServiceAccount(contentsOfFile: testAccount.path)
            return try await withHTTPClient(configuration: configuration) { http in
                try await body(FCMHarness(fake: fake, testAccount: testAccount, account: account, http: http))
            }
        }
    }
}

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current: NIOLockedValueBox<Date>

    init(_ start: Date = Date()) {
        current = NIOLockedValueBox(start)
    }

    var now: Date { current.withLockedValue { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLockedValue { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// Log records kept in memory, for tests that check what was logged.
final class LogRecorder: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let storage = NIOLockedValueBox<[Record]>([])

    var records: [Record] { storage.withLockedValue { $0 } }

    /// A logger whose records land here.
    func logger(label: String = "relay-tests") -> Logger {
        Logger(label: label) { _ in Handler(recorder: self) }
    }

    fileprivate func append(_ record: Record) {
        storage.withLockedValue { $0.append(record) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var flat: [String: String] = [:]
            for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
                flat[key] = "\(value)"
            }
            recorder.append(Record(level: event.level, message: "\(event.message)", metadata: flat))
        }
    }
}

/// JSON helpers: bodies as objects, and a canonical text to compare two JSON values by.
enum JSON {
    static func object(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    static func canonical(_ value: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func canonical(_ bytes: [UInt8]) -> String {
        canonical(object(bytes))
    }
}

extension RelayMessage {
    /// A message as POST /message would store it.
    static func sample(
        _ distribution: Distribution,
        title: String = "Snow day",
        desc: String = "School is closed today",
        message: String = "All schools in the district are closed on Monday because of snow.",
        ttlSeconds: Int64? = nil
    ) -> RelayMessage {
        RelayMessage(
            msiKey: "65f1c0ffee00000000000001",
            topicKey: "65f1c0ffee000000000000aa-65f1c0ffee000000000000bb-65f1c0ffee000000000000cc",
            distribution: distribution,
            title: title,
            desc: desc,
            message: message,
            timestamp: 1_700_000_000_123,
            ttlSeconds: ttlSeconds
        )
    }
}
