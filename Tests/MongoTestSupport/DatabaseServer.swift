import Foundation

/// A SecantusDB server of a test's own, for tests that stop and restart the database under the hub.
public final class DatabaseServer: @unchecked Sendable {
    // @unchecked: `process` is only touched by the owning test, one call at a time.
    public let port: Int
    public let storage: URL
    private var process: Process?
    private var exit: ProcessExit?

    /// The connection string of this server.
    public var uri: String { "mongodb://127.0.0.1:\(port)/msi" }

    /// Starts a server on a free port with its data in a new temporary folder.
    public init() async throws {
        self.port = try LoopbackPort.free()
        self.storage = FileManager.default.temporaryDirectory.appendingPathComponent("secantus-\(UUID().uuidString)")
        try await start()
    }

    deinit {
        process?.terminate()
        try? FileManager.default.removeItem(at: storage)
    }

    /// Starts (or restarts) the server on the same port and storage, and waits until it listens.
    public func start() async throws {
        let python = Fixtures.directory.deletingLastPathComponent().appendingPathComponent(".venv/bin/python")
        let process = Process()
        process.executableURL = python
        process.arguments = [
            "-m", "secantus", "--host", "127.0.0.1", "--port", String(port),
            "--storage-path", storage.path, "--log-level", "WARNING",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let exit = ProcessExit(of: process)
        try process.run()
        self.process = process
        self.exit = exit
        for _ in 0..<200 {
            if LoopbackPort.isListening(port) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CocoaError(.executableLoad)
    }

    /// Stops the server's process (SIGSTOP): it keeps its connections open and answers nothing, as a hung
    /// database does, until `resume()`.
    public func pause() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGSTOP)
    }

    /// Lets a paused server run again (SIGCONT).
    public func resume() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGCONT)
    }

    /// Kills the server at once, as a crash or a network cut would.
    public func kill() async {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        Foundation.kill(process.processIdentifier, SIGCONT)
        await exit?.wait()
        self.process = nil
    }
}

/// Ports on 127.0.0.1 for the servers tests start.
public enum LoopbackPort {
    /// A port nothing listens on now (the kernel's choice).
    public static func free() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileWriteUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts connections on `port`.
    public static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
