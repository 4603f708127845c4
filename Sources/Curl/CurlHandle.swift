import CCurl
import HubTime

/// libcurl's process-wide initialisation, run once, the first time any handle is made.
///
/// A global `let` is initialised lazily and exactly once (swift_once), which is what `curl_global_init`
/// asks for: it is not thread-safe itself and must run before any other libcurl call.
private let curlGlobalInit: CURLcode = ccurl_global_init_default()

/// Runs libcurl's global initialisation if it has not run; every handle's initialiser calls it first.
/// - Throws: `CurlError` when libcurl could not be initialised.
func requireCurlGlobalInit() throws(CurlError) {
    guard curlGlobalInit == CURLE_OK else {
        throw CurlError(curlCode: curlGlobalInit, message: "libcurl could not be initialised")
    }
}

/// The methods the clients send.
public enum CurlMethod: Sendable, Hashable {
    /// GET, no body.
    case get
    /// POST with a body.
    case post
    /// DELETE, no body.
    case delete
}

/// One request as a curl handle performs it.
struct CurlRequest: Sendable {
    typealias Method = CurlMethod

    /// Which HTTP version to ask for.
    enum Version: Sendable {
        /// HTTP/2 where TLS's ALPN agrees to it, else HTTP/1.1; plain http:// is HTTP/1.1.
        case http2OverTLS
        /// HTTP/2 from the first byte, also over plain http:// (h2c with prior knowledge).
        case http2PriorKnowledge
    }

    var method: Method
    var url: String
    var headers: [HTTPHeader]
    var body: [UInt8]
    var connectTimeout: Duration
    var timeout: Duration
    var maxResponseBytes: Int
    var version: Version = .http2OverTLS
    /// Whether a transfer in a multi waits for a connection it can multiplex on rather than open a new one.
    var pipeWait = false
    /// Whether the request opens a connection of its own rather than reuse one (CURLOPT_FRESH_CONNECT).
    var freshConnect = false
    /// The address to connect to in place of resolving the URL's host (CURLOPT_RESOLVE), and no proxy: a request
    /// to an address checked beforehand (webhooks). Its connection is fresh and closed after, never reused.
    var pinned: CurlPinnedAddress?
}

/// The address a request connects to for its URL's host and port, decided by the caller (which checked it) rather
/// than by libcurl's own resolution.
public struct CurlPinnedAddress: Sendable, Hashable {
    /// The URL's host as written (no brackets).
    public var host: String
    /// The URL's port.
    public var port: Int
    /// The IP address to connect to (`192.0.2.1`, `2001:db8::1`).
    public var address: String

    public init(host: String, port: Int, address: String) {
        self.host = host
        self.port = port
        self.address = address
    }

    /// The CURLOPT_RESOLVE entry: `host:port:address`, an IPv6 address in brackets.
    var resolveEntry: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let address = self.address.contains(":") ? "[\(self.address)]" : self.address
        return "\(host):\(port):\(address)"
    }
}

/// One libcurl easy handle, either reused request after request so that its connection cache keeps connections
/// alive (HTTP/1.1 keep-alive, HTTP/2 where the server offers it over TLS; `perform`), or added to a `CurlMulti`
/// for one transfer (`start`, then `finish` once the multi says it is done).
///
/// `curl_easy_cleanup` runs exactly once, in `deinit`. A request's header list and response collector
/// (`RequestStorage`) live from `start` to `finish` only, and the options that point at them are cleared before
/// they go, so neither a later reset nor the cleanup (which closes the kept connections) can reach freed memory.
/// The error buffer lives as long as the handle and is freed after the cleanup.
final class CurlHandle {
    /// The easy handle, for `CurlMulti` to add and remove; libcurl owns what it points at.
    let pointer: UnsafeMutableRawPointer
    /// libcurl writes its detailed message for a failed transfer here (CURLOPT_ERRORBUFFER).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let errorBufferSize: Int
    /// The storage of the request under way, between `start` and `finish`.
    private var storage: RequestStorage?

    /// Makes a handle.
    /// - Throws: `CurlError` `.other` when libcurl cannot initialise or allocate a handle.
    init() throws(CurlError) {
        try requireCurlGlobalInit()
        guard let handle = curl_easy_init() else {
            throw CurlError(code: .other, message: "curl_easy_init failed")
        }
        self.pointer = handle
        self.errorBufferSize = ccurl_error_size()
        self.errorBuffer = .allocate(capacity: errorBufferSize)
        self.errorBuffer.initialize(repeating: 0, count: errorBufferSize)
    }

    deinit {
        curl_easy_cleanup(pointer)
        errorBuffer.deallocate()
        // `storage`, if a request was started and never finished, is released after this, once libcurl is done.
    }

    private var handle: UnsafeMutableRawPointer { pointer }

    /// Performs one request, blocking the calling thread until the response is complete or fails.
    /// - Throws: `CurlError` (`.timeout`, `.connectFailed`, `.tls`, `.invalidRequest`, `.other`).
    func perform(_ request: CurlRequest) throws(CurlError) -> CurlResponse {
        try start(request)
        return try finish(curl_easy_perform(handle))
    }

    /// Sets the handle up for `request` (its options, header list and response collector) without sending it:
    /// `curl_easy_perform` or a multi then runs the transfer, and `finish` reads its outcome.
    /// - Throws: `CurlError` `.invalidRequest` for a header that cannot be sent, or libcurl's refusal of an option.
    func start(_ request: CurlRequest) throws(CurlError) {
        forgetRequest()
        // Forget the previous request's options; live connections and caches stay (curl_easy_reset).
        curl_easy_reset(handle)
        errorBuffer[0] = 0

        let storage = RequestStorage(maxBodyBytes: request.maxResponseBytes)
        for header in request.headers + [HTTPHeader("Expect", "")] {
            guard header.isValid else {
                throw CurlError(code: .invalidRequest, message: "header \(header.name) is not a valid header")
            }
            // "Name:" with an empty value tells libcurl to send no such header (here: no Expect: 100-continue).
            let line = header.value.isEmpty ? "\(header.name):" : "\(header.name): \(header.value)"
            guard let extended = curl_slist_append(storage.headerList, line) else {
                throw CurlError(code: .other, message: "out of memory building the header list")
            }
            storage.headerList = extended
        }
        if let pinned = request.pinned {
            guard let list = curl_slist_append(nil, pinned.resolveEntry) else {
                throw CurlError(code: .other, message: "out of memory building the resolve list")
            }
            storage.resolveList = list
        }
        self.storage = storage
        let setup = configure(request, storage: storage)
        guard setup == CURLE_OK else {
            forgetRequest()
            throw CurlError(curlCode: setup, message: lastErrorMessage(setup))
        }
    }

    /// The response of the transfer `start` set up, now that libcurl ended it with `code`; forgets the request.
    /// - Throws: `CurlError` (`.timeout`, `.connectFailed`, `.tls`, `.invalidRequest`, `.other`) when `code` is
    ///   not CURLE_OK or the body was over the request's limit.
    func finish(_ code: CURLcode) throws(CurlError) -> CurlResponse {
        defer { forgetRequest() }
        guard let storage else {
            throw CurlError(code: .other, message: "no request was started on this handle")
        }
        let collector = storage.collector
        guard code == CURLE_OK else {
            if collector.bodyTooLarge {
                throw CurlError(code: .other, message: "response body over \(collector.maxBodyBytes) bytes")
            }
            throw CurlError(curlCode: code, message: lastErrorMessage(code))
        }

        var status = 0
        var connects = 0
        var version = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        _ = ccurl_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        return CurlResponse(
            status: status,
            headers: collector.headers,
            body: collector.body,
            httpVersion: Self.versionName(version),
            reusedConnection: connects == 0
        )
    }

    /// Clears the options that point at the request's storage (its header list, its collector), then lets the
    /// storage go, so the handle keeps no pointer to freed memory until the next request's reset. The callbacks
    /// stay: without their userdata they take nothing.
    private func forgetRequest() {
        guard storage != nil else { return }
        _ = ccurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, nil)
        _ = ccurl_setopt_pointer(handle, CURLOPT_RESOLVE, nil)
        _ = ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, nil)
        _ = ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, nil)
        storage = nil
    }

    /// Sets every option of `request` on the handle; the first failing option's code, or CURLE_OK.
    private func configure(_ request: CurlRequest, storage: RequestStorage) -> CURLcode {
        let headerList = storage.headerList
        let userdata = Unmanaged.passUnretained(storage.collector).toOpaque()
        let version: Int =
            switch request.version {
            case .http2OverTLS: CURL_HTTP_VERSION_2TLS
            case .http2PriorKnowledge: CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
            }
        var steps: [() -> CURLcode] = [
            { ccurl_setopt_pointer(self.handle, CURLOPT_ERRORBUFFER, self.errorBuffer) },
            { ccurl_setopt_string(self.handle, CURLOPT_URL, request.url) },
            // Never signals: the handle runs on threads of a multi-threaded process.
            { ccurl_setopt_long(self.handle, CURLOPT_NOSIGNAL, 1) },
            { ccurl_setopt_string(self.handle, CURLOPT_PROTOCOLS_STR, "http,https") },
            { ccurl_setopt_long(self.handle, CURLOPT_HTTP_VERSION, version) },
            { ccurl_setopt_long(self.handle, CURLOPT_PIPEWAIT, request.pipeWait ? 1 : 0) },
            { ccurl_setopt_long(self.handle, CURLOPT_FRESH_CONNECT, request.freshConnect ? 1 : 0) },
            // TLS verification is always on, whatever libcurl's build defaults are.
            { ccurl_setopt_long(self.handle, CURLOPT_SSL_VERIFYPEER, 1) },
            { ccurl_setopt_long(self.handle, CURLOPT_SSL_VERIFYHOST, 2) },
            {
                ccurl_setopt_long(
                    self.handle, CURLOPT_CONNECTTIMEOUT_MS, Int(max(1, request.connectTimeout.milliseconds)))
            },
            { ccurl_setopt_long(self.handle, CURLOPT_TIMEOUT_MS, Int(max(1, request.timeout.milliseconds))) },
            { ccurl_setopt_long(self.handle, CURLOPT_TCP_KEEPALIVE, 1) },
            { ccurl_setopt_long(self.handle, CURLOPT_FOLLOWLOCATION, 0) },
            { ccurl_setopt_pointer(self.handle, CURLOPT_HTTPHEADER, headerList) },
            { ccurl_setopt_write_callback(self.handle, CURLOPT_WRITEFUNCTION, collectBody) },
            { ccurl_setopt_pointer(self.handle, CURLOPT_WRITEDATA, userdata) },
            { ccurl_setopt_write_callback(self.handle, CURLOPT_HEADERFUNCTION, collectHeader) },
            { ccurl_setopt_pointer(self.handle, CURLOPT_HEADERDATA, userdata) },
        ]
        if request.pinned != nil, let resolveList = storage.resolveList {
            // The checked address alone: no proxy (which would connect elsewhere), and a connection of its own,
            // closed after (a kept one is matched by host name, not address, and could lead where an earlier
            // resolution pointed).
            steps.append { ccurl_setopt_pointer(self.handle, CURLOPT_RESOLVE, resolveList) }
            steps.append { ccurl_setopt_string(self.handle, CURLOPT_NOPROXY, "*") }
            steps.append { ccurl_setopt_long(self.handle, CURLOPT_FRESH_CONNECT, 1) }
            steps.append { ccurl_setopt_long(self.handle, CURLOPT_FORBID_REUSE, 1) }
        }
        switch request.method {
        case .get:
            steps.append { ccurl_setopt_long(self.handle, CURLOPT_HTTPGET, 1) }
        case .delete:
            // A GET whose method line says DELETE: no body, and libcurl reads the answer as usual.
            steps.append { ccurl_setopt_long(self.handle, CURLOPT_HTTPGET, 1) }
            steps.append { ccurl_setopt_string(self.handle, CURLOPT_CUSTOMREQUEST, "DELETE") }
        case .post:
            steps.append { ccurl_setopt_long(self.handle, CURLOPT_POST, 1) }
            steps.append {
                ccurl_setopt_off_t(self.handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
            }
            // COPYPOSTFIELDS copies the bytes, so the body need not outlive this call.
            steps.append {
                request.body.withUnsafeBytes { raw in
                    "".withCString { empty in
                        let bytes = raw.baseAddress ?? UnsafeRawPointer(empty)
                        let pointer = UnsafeMutableRawPointer(mutating: bytes)
                        return ccurl_setopt_pointer(self.handle, CURLOPT_COPYPOSTFIELDS, pointer)
                    }
                }
            }
        }
        for step in steps {
            let code = step()
            guard code == CURLE_OK else { return code }
        }
        return CURLE_OK
    }

    /// libcurl's detailed message for the failed transfer, or its generic text for `code`.
    private func lastErrorMessage(_ code: CURLcode) -> String {
        errorBuffer[errorBufferSize - 1] = 0
        let detailed = String(cString: errorBuffer)
        if !detailed.isEmpty { return detailed }
        return curl_easy_strerror(code).map { String(cString: $0) } ?? "curl error \(code.rawValue)"
    }

    private static func versionName(_ version: Int) -> String {
        switch version {
        case Int(CURL_HTTP_VERSION_1_0): "HTTP/1.0"
        case Int(CURL_HTTP_VERSION_1_1): "HTTP/1.1"
        case Int(CURL_HTTP_VERSION_2_0): "HTTP/2"
        case Int(CURL_HTTP_VERSION_3): "HTTP/3"
        default: "unknown"
        }
    }
}

/// What one request's options point at while it runs: its header list (freed here) and its response collector.
private final class RequestStorage {
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// The CURLOPT_RESOLVE list of a pinned request (freed here).
    var resolveList: UnsafeMutablePointer<curl_slist>?
    let collector: ResponseCollector

    init(maxBodyBytes: Int) {
        self.collector = ResponseCollector(maxBodyBytes: maxBodyBytes)
    }

    deinit {
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
    }
}

/// Collects one response's header lines and body bytes from libcurl's callbacks.
private final class ResponseCollector {
    let maxBodyBytes: Int
    var headers: [HTTPHeader] = []
    var body: [UInt8] = []
    var bodyTooLarge = false

    init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
    }

    func addHeaderLine(_ line: String) {
        let trimmed = line.trimmingWhitespace()
        if trimmed.hasPrefix("HTTP/") {
            // A new status line: an interim (1xx) response or a redirect came before; keep the last one's headers.
            headers.removeAll()
        } else if let colon = trimmed.firstIndex(of: ":") {
            let name = String(trimmed[..<colon])
            let value = String(trimmed[trimmed.index(after: colon)...]).trimmingWhitespace()
            headers.append(HTTPHeader(name, value))
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs, CR and LF (by scalar: "\r\n" is one Character).
    fileprivate func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(scalars[first...last])
    }
}

/// CURLOPT_WRITEFUNCTION: appends body bytes to the request's collector (CURLOPT_WRITEDATA).
private let collectBody: ccurl_data_callback = { data, size, count, userdata in
    guard let userdata else { return 0 }
    let collector = Unmanaged<ResponseCollector>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    guard collector.body.count + length <= collector.maxBodyBytes else {
        collector.bodyTooLarge = true
        return 0  // anything but `length` makes libcurl abort the transfer with CURLE_WRITE_ERROR
    }
    if let data, length > 0 {
        collector.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    }
    return length
}

/// CURLOPT_HEADERFUNCTION: hands each complete header line to the request's collector (CURLOPT_HEADERDATA).
private let collectHeader: ccurl_data_callback = { data, size, count, userdata in
    guard let userdata else { return 0 }
    let collector = Unmanaged<ResponseCollector>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    if let data, length > 0 {
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        collector.addHeaderLine(String(decoding: bytes, as: UTF8.self))
    }
    return length
}
