import FakeFCM
import MSIKit
import Synchronization

/// A simulated phone's push SDK over the fake FCM in this process: its token (which the test can rotate, as FCM
/// does), and the data of every message the fake delivered to that token, taken from the fake's inbox every
/// 50 ms while the phone listens.
final class InboxPush: PushProvider {
    let fake: FakeFCM
    private let token: Mutex<String>
    private let rotations: AsyncStream<String>.Continuation
    let tokenChanges: AsyncStream<String>

    init(fake: FakeFCM, token: String) {
        self.fake = fake
        self.token = Mutex(token)
        (tokenChanges, rotations) = AsyncStream.makeStream(of: String.self)
    }

    /// The token the fake delivers to now.
    var registration: String { token.withLock { $0 } }

    func currentToken() async throws -> String { registration }

    /// FCM gives the phone a new token: the SDK reports it (`MSIClient.run` tells the hub).
    func rotate(to newToken: String) {
        token.withLock { $0 = newToken }
        rotations.yield(newToken)
    }

    /// Throws away what FCM queued for the phone: the pushes a phone that was off never got.
    func loseQueuedPushes() -> Int { fake.drainInbox(registration).count }

    /// Each delivery's data, in the order the fake queued them, until the listening task is cancelled.
    var payloads: AsyncStream<[String: String]> {
        AsyncStream { continuation in
            let poller = Task {
                while !Task.isCancelled {
                    for delivery in self.fake.drainInbox(self.registration) { continuation.yield(delivery.data) }
                    do { try await Task.sleep(for: .milliseconds(50)) } catch { break }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in poller.cancel() }
        }
    }
}
