import DAO
import Foundation
import HTTPTypes
@testable import HubServer
import HummingbirdTesting
import Mongo
import MongoTestSupport
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// Raw TCP clients against the real hub: a head sent a byte at a time, a connection left open with nothing sent,
/// one connection too many. Times are asserted one way only: never closed before the deadline; "after" is any time
/// within a generous limit.
@Suite("Connection deadlines and the connection cap", .tags(.faults))
struct ConnectionDeadlineTests {
    static let health = "GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n"

    @Test func aHeadSentAByteAtATimeIsClosedAtItsDeadlineWhileAnotherClientIsServed() async throws {
        let deadlines = ConnectionConfiguration(
            idleTimeout: .seconds(60), headerTimeout: .seconds(1),
            requestTimeout: .seconds(3))
        try await Self.withHub(deadlines) { port, client in
            let slowClosed = Flag()
            async let slow = RawConnection.with(port: port) { connection in
                let started = ContinuousClock.now
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: hub\r\nX-Slow: ")
                // A header byte every 200 ms: each one arrives in time, the head never ends.
                while connection.isOpen, ContinuousClock.now - started < .seconds(30) {
                    try? await connection.send("a")
                    try await Task.sleep(for: .milliseconds(200))
                }
                slowClosed.set()
                return (open: connection.isOpen, after: ContinuousClock.now - started)
            }
            async let served = RawConnection.with(port: port) { connection in
                var statuses: [Int?] = []
                repeat {
                    try await connection.send(Self.health)
                    statuses.append(try await connection.responseStatus())
                    try await Task.sleep(for: .milliseconds(100))
                } while !slowClosed.isSet && statuses.count < 300
                // The same connection still serves after the slow one is gone.
                try await connection.send(Self.health)
                statuses.append(try await connection.responseStatus())
                return statuses
            }
            let (slowResult, statuses) = try await (slow, served)
            #expect(!slowResult.open, "the hub never closed the slow connection")
            #expect(slowResult.after >= .seconds(1), "closed before the head's deadline")
            #expect(statuses.count >= 2)
            #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"msi_http_connections_timed_out_total{deadline="header"}"#))
        }
    }

    @Test func aBodySentAByteAtATimeIsClosedAtTheRequestDeadline() async throws {
        let deadlines = ConnectionConfiguration(
            idleTimeout: .seconds(60), headerTimeout: .seconds(1),
            requestTimeout: .seconds(2))
        try await Self.withHub(deadlines) { port, _ in
            let result = try await RawConnection.with(port: port) { connection in
                let started = ContinuousClock.now
                try await connection.send(
                    "POST /device HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 4000\r\n\r\n{")
                while connection.isOpen, ContinuousClock.now - started < .seconds(30) {
                    try? await connection.send(" ")
                    try await Task.sleep(for: .milliseconds(200))
                }
                return (open: connection.isOpen, after: ContinuousClock.now - started)
            }
            #expect(!result.open, "the hub never closed the slow connection")
            #expect(result.after >= .seconds(2), "closed before the request's deadline")
        }
    }

    @Test func anIdleKeptAliveConnectionIsClosedAndABusyOneIsNot() async throws {
        let deadlines = ConnectionConfiguration(
            idleTimeout: .seconds(1), headerTimeout: .seconds(5),
            requestTimeout: .seconds(5))
        try await Self.withHub(deadlines) { port, _ in
            async let idle = RawConnection.with(port: port) { connection in
                // Counted from before the request: the hub's idle time starts after it, when the answer is written.
                let asked = ContinuousClock.now
                try await connection.send(Self.health)
                let status = try await connection.responseStatus()
                let closed = await connection.closedByTheHub()
                return (status: status, closed: closed, after: ContinuousClock.now - asked)
            }
            // A request every 300 ms keeps a connection busy for twice the idle timeout and more.
            async let busy = RawConnection.with(port: port) { connection in
                var statuses: [Int?] = []
                for _ in 0..<8 {
                    try await connection.send(Self.health)
                    statuses.append(try await connection.responseStatus())
                    try await Task.sleep(for: .milliseconds(300))
                }
                return statuses
            }
            let (idleResult, busyStatuses) = try await (idle, busy)
            #expect(idleResult.status == 200)
            #expect(idleResult.closed, "the hub never closed the idle connection")
            #expect(idleResult.after >= .seconds(1), "closed before the idle deadline")
            #expect(busyStatuses == Array(repeating: 200, count: 8))
        }
    }

    @Test func pastTheCapANewConnectionIsRefusedWhileOpenOnesAreServed() async throws {
        // The test client's own connection is one of the three.
        let cap = ConnectionConfiguration(maxConnections: 3)
        try await Self.withHub(cap) { port, client in
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            try await RawConnection.with(port: port) { first in
                let refused = try await RawConnection.with(port: port) { second in
                    try await first.send(Self.health)
                    #expect(try await first.responseStatus() == 200)
                    try await second.send(Self.health)
                    #expect(try await second.responseStatus() == 200)
                    // One too many: answered 503 before it sends anything, and closed.
                    let refused = try await RawConnection.with(port: port) { third in
                        let status = try await third.responseStatus()
                        return (status: status, closed: await third.closedByTheHub(), text: third.received)
                    }
                    #expect(refused.status == 503)
                    #expect(refused.closed)
                    #expect(refused.text.contains("too_many_connections"))
                    // The connections already open are served as before.
                    try await second.send(Self.health)
                    #expect(try await second.responseStatus() == 200)
                    return refused
                }
                #expect(refused.status == 503)
                // The second connection closed: its place is given back (once the hub has seen it close).
                var status: Int?
                for _ in 0..<100 where status != 200 {
                    status = try await RawConnection.with(port: port) { again in
                        try? await again.send(Self.health)
                        return try await again.responseStatus()
                    }
                    if status != 200 { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(status == 200)
                try await first.send(Self.health)
                #expect(try await first.responseStatus() == 200)
            }
            let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains("msi_http_connections_refused_total"))
        }
    }

    @Test func theSettingsComeFromTheEnvironment() throws {
        let configuration = try HubConfiguration.fromEnvironment([
            "HTTP_IDLE_TIMEOUT_SECONDS": "5", "HTTP_HEADER_TIMEOUT_SECONDS": "2", "HTTP_REQUEST_TIMEOUT_SECONDS": "7",
            "HTTP_MAX_CONNECTIONS": "10",
        ])
        #expect(configuration.connections.idleTimeout == .seconds(5))
        #expect(configuration.connections.headerTimeout == .seconds(2))
        #expect(configuration.connections.requestTimeout == .seconds(7))
        #expect(configuration.connections.maxConnections == 10)
        let defaults = try HubConfiguration.fromEnvironment([:]).connections
        #expect(defaults.idleTimeout == .seconds(60) && defaults.requestTimeout == .seconds(30))
        #expect(defaults.headerTimeout == .seconds(10) && defaults.maxConnections == 4096)
        for (name, value) in [
            ("HTTP_IDLE_TIMEOUT_SECONDS", "0"), ("HTTP_REQUEST_TIMEOUT_SECONDS", "soon"),
            ("HTTP_HEADER_TIMEOUT_SECONDS", "-1"), ("HTTP_MAX_CONNECTIONS", "0"),
        ] {
            let error = #expect(throws: ConfigurationError.self) { try HubConfiguration.fromEnvironment([name: value]) }
            #expect(error?.description.contains(name) == true)
        }
    }

    /// The real hub with `connections`, on an ephemeral port over a database of the test's own; `body` gets the
    /// port and the test client (whose connection is open).
    static func withHub(
        _ connections: ConnectionConfiguration, test: String = #function,
        _ body: @Sendable (Int, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await TestDatabase.with(test) { database in
            try await DatabaseIndexes.ensure(in: database)
            var configuration = HubConfiguration(
                mongoURI: try TestDatabase.uri(), port: 0, databasePoolSize: 2,
                writeDeadline: .seconds(30), relay: RelayConfiguration(concurrency: 0))
            configuration.connections = connections
            let app = try await buildApplication(configuration: configuration, databaseName: database.name)
            try await app.test(.live) { client in
                try await body(try #require(client.port), client)
            }
        }
    }
}

/// A flag tasks share.
final class Flag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}

/// One TCP connection to the hub that writes bytes as given and reads HTTP/1.1 answers. A watchdog closes it after
/// a minute, so a hub that never answers or never closes fails the test instead of hanging it.
final class RawConnection {
    private let channel: any NIOCore.Channel
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var buffer = ByteBuffer()
    /// Set when the watchdog closed the connection, not the hub.
    private let gaveUp: Flag
    /// Everything read so far, answers already taken included.
    private(set) var received = ""

    private init(
        channel: any NIOCore.Channel, inbound: NIOAsyncChannelInboundStream<ByteBuffer>,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, gaveUp: Flag
    ) {
        self.channel = channel
        self.gaveUp = gaveUp
        self.inbound = inbound.makeAsyncIterator()
        self.outbound = outbound
    }

    /// Opens a connection to 127.0.0.1:`port`, runs `body` with it, and closes it.
    static func with<Result: Sendable>(port: Int, _ body: (RawConnection) async throws -> Result) async throws -> Result
    {
        let asyncChannel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let channel = asyncChannel.channel
        let gaveUp = Flag()
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            gaveUp.set()
            channel.close(promise: nil)
        }
        defer { watchdog.cancel() }
        return try await asyncChannel.executeThenClose { inbound, outbound in
            try await body(RawConnection(channel: channel, inbound: inbound, outbound: outbound, gaveUp: gaveUp))
        }
    }

    /// Whether the connection is still open (the hub has not closed it; the watchdog neither).
    var isOpen: Bool { channel.isActive || gaveUp.isSet }

    func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    /// The status of the next answer, read whole (its head and `Content-Length` bytes); nil if the connection
    /// closed first.
    func responseStatus() async throws -> Int? {
        while true {
            if let status = takeAnswer() { return status }
            guard var chunk = try? await inbound.next() else { return nil }
            received += String(buffer: chunk)
            buffer.writeBuffer(&chunk)
        }
    }

    /// Whether the hub closed the connection before the watchdog did (anything it sends meanwhile is kept).
    func closedByTheHub() async -> Bool {
        while true {
            guard var chunk = try? await inbound.next() else { return !gaveUp.isSet }
            received += String(buffer: chunk)
            buffer.writeBuffer(&chunk)
        }
    }

    /// The first whole answer in the buffer, removed from it.
    private func takeAnswer() -> Int? {
        let text = String(buffer: buffer)
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<end.lowerBound]
        let length =
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let headBytes = text[..<end.upperBound].utf8.count
        guard buffer.readableBytes >= headBytes + length else { return nil }
        buffer.moveReaderIndex(forwardBy: headBytes + length)
        buffer.discardReadBytes()
        return head.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }
}
