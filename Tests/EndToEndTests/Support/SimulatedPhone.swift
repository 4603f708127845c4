import FakeFCM
import Foundation
import MSIKit
import Synchronization

/// One phone: an MSIKit client with a store of its own (in memory, or in `directory`), its push SDK over the fake
/// FCM, and what its listener handed the app.
final class SimulatedPhone: Sendable {
    let client: MSIClient
    let push: InboxPush
    /// Every message the library said was new (push or catch-up), in order: none may come twice.
    private let shown = Mutex<[ReceivedMessage]>([])
    private let errors = Mutex<[MSIKitError]>([])
    private let listener = Mutex<Task<Void, Never>?>(nil)

    init(hub: URL, fake: FakeFCM, token: String, directory: URL? = nil) throws {
        push = InboxPush(fake: fake, token: token)
        client = try MSIClient(configuration: .init(hub: hub, directory: directory, platform: .android), push: push)
    }

    /// `start()`: register or resume, then catch up; what it caught up counts as shown.
    func start() async throws {
        let caughtUp = try await client.start()
        shown.withLock { $0.append(contentsOf: caughtUp) }
    }

    /// A catch-up on coming to the foreground.
    func catchUp() async throws {
        let caughtUp = try await client.catchUp()
        shown.withLock { $0.append(contentsOf: caughtUp) }
    }

    /// Starts listening to pushes (and token changes) in the background.
    func listen() {
        let task = Task {
            await client.run(
                onMessage: { received in self.shown.withLock { $0.append(received) } },
                onError: { error in self.errors.withLock { $0.append(error) } })
        }
        listener.withLock { $0 = task }
    }

    /// Stops listening: the phone is off.
    func stop() {
        listener.withLock { $0?.cancel() }
    }

    /// The keys of what the app was shown, in order.
    var shownKeys: [String] { shown.withLock { $0.map(\.message.msiKey) } }
    /// What the app was shown.
    var shownMessages: [ReceivedMessage] { shown.withLock { $0 } }
    /// The listener's failures.
    var listenerErrors: [MSIKitError] { errors.withLock { $0 } }
    /// The keys of the stored messages.
    func storedKeys() async throws -> Set<String> { Set(try await client.store.messages().map(\.msiKey)) }
}
