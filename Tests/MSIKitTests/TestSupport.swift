import Foundation
import MSIKit
import Testing

/// The instant of an ISO 8601 date-time with fractional seconds allowed ("2026-03-10T14:00:00Z").
func instant(_ text: String) -> Date {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions =
        text.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
    guard let date = formatter.date(from: text) else { preconditionFailure("not an ISO 8601 date: \(text)") }
    return date
}

/// Unix milliseconds of an ISO 8601 date-time.
func milliseconds(_ text: String) -> Int64 {
    Int64((instant(text).timeIntervalSince1970 * 1000).rounded())
}

/// A message with a distinct key, on a topic of the given channel.
func message(
    _ number: Int, at timestamp: Int64, channel: String = "5a0b1c2d3e4f5a6b7c8d9e01",
    distribution: Distribution = .information
) -> Message {
    Message(
        msiKey: String(format: "%024x", number),
        topicKey: "\(channel)-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e03",
        distribution: distribution, title: "Title \(number)", desc: "", text: "Text \(number)", timestamp: timestamp)
}

/// The fixture cube: the legacy hub's GET /channel for fixtures/legacy-channel.json, plus a second channel whose
/// subjects lack `desc` or `opt`.
func fixtureCube() throws -> Cube {
    let url = try #require(Bundle.module.url(forResource: "cube", withExtension: "json", subdirectory: "Fixtures"))
    return try Cube(json: Data(contentsOf: url))
}

/// A push provider with nothing to deliver: for the parts of the client that need no pushes.
struct SilentPush: PushProvider {
    func currentToken() async throws -> String { "sim-token" }
    var tokenChanges: AsyncStream<String> { AsyncStream { $0.finish() } }
    var payloads: AsyncStream<[String: String]> { AsyncStream { $0.finish() } }
}
