import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Mongo
import MongoTestSupport
import Testing

/// The real `msi-hub` executable run as a separate process, as a second replica or a process to kill.
final class HubProcess: @unchecked Sendable {
    // @unchecked: the process handle is only touched by the owning test, one call at a time.
    let port: Int
    private let process: Process
    private let exit: ProcessExit
    /// Where the process's standard output and error go, for a failing test to show.
    let logURL: URL

    /// The executable `swift build` made beside the test bundle.
    static var executable: URL {
        let bundle = Bundle.main.bundleURL
        var candidates = [
            bundle.deletingLastPathComponent().appendingPathComponent("msi-hub"),
            bundle.appendingPathComponent("msi-hub"),
        ]
        candidates.append(Fixtures.directory.deletingLastPathComponent().appendingPathComponent(".build/debug/msi-hub"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// The URI of `database` on the test database server.
    static func uri(of database: MongoDatabase) throws -> String {
        try TestDatabase.uri().replacingOccurrences(of: "/msi", with: "/\(database.name)")
    }

    /// Starts `msi-hub serve` on a free port against `mongoURI` and waits until it answers /healthz.
    init(mongoURI: String, environment: [String: String] = [:]) async throws {
        port = try LoopbackPort.free()
        process = Process()
        process.executableURL = Self.executable
        process.arguments = ["serve", "--port", String(port), "--mongodb-uri", mongoURI]
        // The approval policy's default rules off, as in `HubHarness`: these tests' sends go at once.
        var env = ProcessInfo.processInfo.environment.merging(["APPROVAL_DEFAULTS": "off"]) { $1 }
        env.merge(environment) { $1 }
        process.environment = env
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent("msi-hub-\(port).log")
        FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.standardOutput = log
        process.standardError = log
        exit = ProcessExit(of: process)
        try process.run()
        // Up to 30 s: a cold start (indexes, the first admin, the copies) beside eighteen suites' hubs on two cores.
        for _ in 0..<600 {
            if (try? await get("/healthz"))?.status == 200 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop()
        Issue.record("msi-hub serve did not answer /healthz within 30 s; it printed:\n\(self.log.suffix(4_000))")
        throw CocoaError(.executableLoad)
    }

    deinit { stop() }

    /// What the process printed so far.
    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// Sends a GET and returns the status and body.
    func get(_ path: String, headers: [String: String] = [:]) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        for (key, value) in headers { request.setValue(value, forHTTPHeaderField: key) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// Sends a POST of `json` with `Authorization: Bearer token` and returns the status and body.
    func post(_ path: String, json: String, token: String) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(json.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// SIGTERM: a graceful stop, not waited for (`stopped()` waits).
    func stop() {
        if !exit.hasExited { process.terminate() }
    }

    /// SIGTERM, and returns once the process has ended.
    func stopped() async {
        stop()
        await exit.wait()
    }

    /// SIGKILL: a crash; returns once the process is gone.
    func kill() async {
        if !exit.hasExited { Foundation.kill(process.processIdentifier, SIGKILL) }
        await exit.wait()
    }
}
