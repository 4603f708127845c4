import Foundation
import MSIKit
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The simulated phone's push SDK: polls the fake FCM's inbox for its registration every 200 ms
/// (`GET {fakeFCM}/_inbox/{registration}` returns and removes the queued messages) and hands over their data.
struct FakeFCMPush: PushProvider {
    let fakeFCM: URL
    let registration: String
    static let interval: Duration = .milliseconds(200)

    func currentToken() async throws -> String { registration }

    /// A simulated registration token never rotates: a stream that ends at once.
    var tokenChanges: AsyncStream<String> { AsyncStream { $0.finish() } }

    var payloads: AsyncStream<[String: String]> {
        let inbox = fakeFCM.appendingPathComponent("_inbox").appendingPathComponent(registration)
        return AsyncStream { continuation in
            let poller = Task {
                while !Task.isCancelled {
                    do {
                        for message in try await Self.fetch(inbox) { continuation.yield(message.data) }
                    } catch is CancellationError {
                        break
                    } catch {
                        Output.error("inbox: \(error)")
                    }
                    do { try await Task.sleep(for: Self.interval) } catch { break }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in poller.cancel() }
        }
    }

    /// The inbox's answer.
    private struct Inbox: Decodable {
        struct Delivery: Decodable {
            var topic: String?
            var data: [String: String]
        }
        var messages: [Delivery]
    }

    private static func fetch(_ inbox: URL) async throws -> [Inbox.Delivery] {
        let (data, response) = try await URLSession.shared.data(from: inbox)
        guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
            throw CommandFailure("the fake FCM answered \((response as? HTTPURLResponse)?.statusCode ?? 0)")
        }
        return try JSONDecoder().decode(Inbox.self, from: data).messages
    }
}
