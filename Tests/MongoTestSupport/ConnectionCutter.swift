import Foundation

/// A TCP proxy between a hub and the test database that cuts every connection through it at once while the database
/// stays up (`scripts/connection-cutter.py`): what a network cut, a firewall's idle timeout or a restarted load
/// balancer does to a hub's pooled connections and its workers' streams.
public final class ConnectionCutter: @unchecked Sendable {
    // @unchecked: `process` is set once in `init` and only signalled afterwards.
    /// Where the hub connects instead of the database.
    public let port: Int
    private let process: Process
    private let status: URL

    /// Starts a proxy to the database server of `uri` (a `mongodb://host:port/...` string) on a free port.
    public init(to uri: String) async throws {
        guard let target = URLComponents(string: uri)?.port else { throw CocoaError(.fileReadInvalidFileName) }
        port = try LoopbackPort.free()
        status = FileManager.default.temporaryDirectory.appendingPathComponent("cutter-\(UUID().uuidString)")
        let root = Fixtures.directory.deletingLastPathComponent()
        process = Process()
        process.executableURL = root.appendingPathComponent(".venv/bin/python")
        process.arguments = [
            root.appendingPathComponent("scripts/connection-cutter.py").path, String(port),
            String(target), status.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<200 {
            if cuts == 0 && LoopbackPort.isListening(port) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.terminate()
        throw CocoaError(.executableLoad)
    }

    deinit {
        process.terminate()
        try? FileManager.default.removeItem(at: status)
    }

    /// `uri` with the proxy's port in place of the database's.
    public func uri(through uri: String) -> String {
        guard var components = URLComponents(string: uri) else { return uri }
        components.port = port
        return components.string ?? uri
    }

    /// The cuts made so far; nil until the proxy listens.
    private var cuts: Int? {
        (try? String(contentsOf: status, encoding: .utf8)).flatMap { Int($0) }
    }

    /// Cuts every connection open through the proxy, and returns once it has.
    public func cut() async throws {
        let before = cuts ?? 0
        kill(process.processIdentifier, SIGUSR1)
        for _ in 0..<200 {
            if (cuts ?? 0) > before { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw CocoaError(.executableLoad)
    }
}
