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
        /// The requests waiting, oldest first, from `head` on (those before it have started): a request that ends
        /// starts the next ones without copying or walking the others, however many wait (a fan-out hands over
        /// thousands).
        var held: [Submission] = []
        var head = 0

        var isHolding: Bool { head < held.count }

        /// `submission` adjusted to start now (riding a live connection, or probing a new one), or nil when there is
        /// no room for it.
        mutating func start(_ submission: Submission, origin key: String, streams: Int, connections: Int)
            -> Submission?
        {
            if riding < live * streams {
                riding += 1
                var rider = submission
                rider.request.version = .http2OverTLS
                rider.ticket = GateTicket(origin: key, probe: false)
                return rider
            }
            if live + probing < connections {
                probing += 1
                var probe = submission
                probe.request.freshConnect = true
                probe.ticket = GateTicket(origin: key, probe: true)
                return probe
            }
            return nil
        }

        /// Notes that a transfer this origin let through ended (a `probe`, or one riding a live connection); the
        /// waiting requests that may start now.
        mutating func finished(probe: Bool, _ outcome: Outcome, origin key: String, streams: Int, connections: Int)
            -> [Submission]
        {
            if probe {
                probing -= 1
                if outcome == .http2 { live += 1 }
            } else {
                riding -= 1
                if outcome == .other { live = max(0, live - 1) }
            }
            return startWaiting(origin: key, streams: streams, connections: connections)
        }

        /// The waiting requests that may start now, oldest first, adjusted.
        private mutating func startWaiting(origin key: String, streams: Int, connections: Int) -> [Submission] {
            var started: [Submission] = []
            while isHolding, let next = start(held[head], origin: key, streams: streams, connections: connections) {
                started.append(next)
                head += 1
            }
            // The started ones are dropped from the front once they are most of the array.
            if head > 0, head * 2 >= held.count {
                held.removeFirst(head)
                head = 0
            }
            return started
        }
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

    /// The submission to start now (its request adjusted, its ticket set), or nil when it waits here (behind the
    /// others waiting for its origin).
    mutating func admit(_ submission: Submission) -> Submission? {
        guard submission.request.version == .http2PriorKnowledge, let key = Self.origin(of: submission.request.url)
        else { return submission }
        // In place in the dictionary: a copy of the origin would copy its waiting requests at each append.
        if !origins[key, default: Origin()].isHolding,
            let started = origins[key, default: Origin()].start(
                submission, origin: key, streams: streams,
                connections: connections)
        {
            return started
        }
        origins[key, default: Origin()].held.append(submission)
        return nil
    }

    /// Notes that the transfer holding `ticket` ended; the waiting submissions that may start now, adjusted.
    mutating func finished(_ ticket: GateTicket, _ outcome: Outcome) -> [Submission] {
        guard origins[ticket.origin] != nil else { return [] }
        return origins[ticket.origin, default: Origin()].finished(
            probe: ticket.probe, outcome, origin: ticket.origin,
            streams: streams, connections: connections)
    }

    /// Takes the waiting submission `id` out, for its cancellation.
    mutating func withdraw(_ id: UInt64) -> Submission? {
        for key in origins.keys {
            guard
                let index = origins[key].flatMap({ origin in
                    origin.held[origin.head...].firstIndex { $0.id == id }
                })
            else { continue }
            return origins[key, default: Origin()].held.remove(at: index)
        }
        return nil
    }

    /// Whether any submission waits here.
    var isHolding: Bool { origins.values.contains(where: \.isHolding) }

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
