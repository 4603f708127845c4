import CCurl

/// Works around a bug of libcurl before 8.0.0 (curl/curl#10634, Debian 12's 7.88): a request that asks for HTTP/2
/// with prior knowledge and reuses an h2c connection puts a second HTTP/2 layer on it, and the connection fails
/// ("Error in the HTTP2 framing layer"). So only probes ask for prior knowledge: each opens a connection of its own
/// (CURLOPT_FRESH_CONNECT), while requests wait and up to `connections` per origin. The other requests ask for
/// HTTP/2 the ALPN way (CURL_HTTP_VERSION_2TLS), which reuses an h2c connection as it is; at most `streams` of them
/// a connection a probe proved, so that libcurl finds a connection with room (a new one would speak HTTP/1.1).
/// The rest wait here.
///
/// I/O-free: `MultiLoop` asks it what to start and tells it what ended. TLS (HTTP/2 by ALPN) and newer libcurl
/// never pass through it.
struct PriorKnowledgeGate {
    /// Whether the libcurl in use has the bug.
    static let isNeeded = ccurl_version_num() < 0x08_00_00

    /// How a gated transfer ended, as far as the gate cares.
    enum Outcome {
        /// An answer came over HTTP/2: its h2c connection works.
        case http2
        /// No answer, or one over HTTP/1.1: an h2c connection may have gone.
        case other
        /// The caller cancelled it: says nothing about the connection.
        case cancelled
    }

    private struct Origin {
        /// h2c connections that probes opened and that are taken to be open.
        var live = 0
        var probing = 0
        /// Requests in libcurl that ride on the live connections.
        var riding = 0
        var held: [Submission] = []
    }

    /// The most requests on one h2c connection.
    let streams: Int
    /// The most h2c connections to one origin.
    let connections: Int
    private var origins: [String: Origin] = [:]

    /// A gate letting `streams` requests share each of at most `connections` h2c connections of an origin.
    init(streams: Int, connections: Int) {
        self.streams = streams
        self.connections = connections
    }

    /// The submission to start now (its request adjusted, its ticket set), or nil when it waits here.
    mutating func admit(_ submission: Submission) -> Submission? {
        guard submission.request.version == .http2PriorKnowledge, let key = Self.origin(of: submission.request.url)
        else { return submission }
        var origin = origins[key, default: Origin()]
        defer { origins[key] = origin }
        if origin.riding < origin.live * streams {
            origin.riding += 1
            var rider = submission
            rider.request.version = .http2OverTLS
            rider.ticket = GateTicket(origin: key, probe: false)
            return rider
        }
        if origin.live + origin.probing < connections {
            origin.probing += 1
            var probe = submission
            probe.request.freshConnect = true
            probe.ticket = GateTicket(origin: key, probe: true)
            return probe
        }
        origin.held.append(submission)
        return nil
    }

    /// Notes that the transfer holding `ticket` ended; the waiting submissions that may start now, adjusted.
    mutating func finished(_ ticket: GateTicket, _ outcome: Outcome) -> [Submission] {
        guard var origin = origins[ticket.origin] else { return [] }
        if ticket.probe {
            origin.probing -= 1
            if outcome == .http2 { origin.live += 1 }
        } else {
            origin.riding -= 1
            if outcome == .other { origin.live = max(0, origin.live - 1) }
        }
        let waiting = origin.held
        origin.held.removeAll()
        origins[ticket.origin] = origin
        return waiting.compactMap { admit($0) }
    }

    /// Takes the waiting submission `id` out, for its cancellation.
    mutating func withdraw(_ id: UInt64) -> Submission? {
        for (key, var origin) in origins {
            guard let index = origin.held.firstIndex(where: { $0.id == id }) else { continue }
            let submission = origin.held.remove(at: index)
            origins[key] = origin
            return submission
        }
        return nil
    }

    /// Whether any submission waits here.
    var isHolding: Bool { origins.values.contains { !$0.held.isEmpty } }

    /// `scheme://authority` of `url`, lowercased: what libcurl's connections are kept by.
    static func origin(of url: String) -> String? {
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        // "http:", "", "host:port", the rest
        guard parts.count >= 3, parts[0].hasSuffix(":"), parts[1].isEmpty else { return nil }
        let authority = parts[2].prefix { $0 != "?" && $0 != "#" }
        return "\(parts[0])//\(authority)".lowercased()
    }
}

/// What the gate lent a submission: its origin, and whether it is the probe.
struct GateTicket: Sendable {
    let origin: String
    let probe: Bool
}
