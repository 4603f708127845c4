import Foundation
import CompressNIO
import Crypto
import Mongo
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// A response body prepared once per cube version: plain and gzip bytes, a strong ETag, and the
/// four answers a GET can get (plain or gzip, 200 or 304) with their headers already made.
struct CachedBody: Sendable {
    let plain: ByteBuffer
    let gzip: ByteBuffer
    /// The ETag of the plain bytes (quoted); the gzip bytes carry it with a `-gz` suffix.
    let etag: String
    let gzipETag: String
    /// Indexed by `Self.index(gzip:notModified:)`.
    private let answers: [Answer]

    init(json: [UInt8]) throws {
        self.plain = ByteBuffer(bytes: json)
        var input = plain
        self.gzip = try input.compress(with: .gzip())
        self.etag = Self.etag(of: json)
        self.gzipETag = "\"\(etag.dropFirst().dropLast())-gz\""
        var answers: [Answer] = []
        for gzip in [false, true] {
            for notModified in [false, true] {
                answers.append(
                    Answer(
                        body: gzip ? self.gzip : plain, etag: gzip ? gzipETag : etag, gzip: gzip,
                        notModified: notModified))
            }
        }
        self.answers = answers
    }

    /// The strong ETag of `json`: a hash of the content, so every replica gives the same version the same tag.
    static func etag(of json: [UInt8]) -> String {
        let digest = Hex.encode(SHA256.hash(data: json).prefix(16))
        return "\"\(digest)\""
    }

    /// What a GET of this body answers, headers included. The network thread's fast path
    /// (`CubeChannelHandler`) and the router both take their answer from here.
    struct Answer: Sendable {
        let status: HTTPResponse.Status
        /// The headers as HTTP types (the router's).
        let fields: HTTPFields
        /// The same headers as HTTP/1 headers (the network thread's).
        let headers: HTTPHeaders
        /// The bytes to send after a 200; nil for a 304.
        let body: ByteBuffer?

        fileprivate init(body: ByteBuffer, etag: String, gzip: Bool, notModified: Bool) {
            var pairs: [(HTTPField.Name, String)] = [
                (.eTag, etag), (.cacheControl, "public, no-cache"), (.vary, "Accept-Encoding"),
            ]
            if !notModified {
                pairs.append((.contentType, "application/json; charset=utf-8"))
                if gzip { pairs.append((.contentEncoding, "gzip")) }
                pairs.append((.contentLength, String(body.readableBytes)))
            }
            self.status = notModified ? .notModified : .ok
            self.fields = HTTPFields(pairs.map { HTTPField(name: $0.0, value: $0.1) })
            self.headers = HTTPHeaders(pairs.map { ($0.0.canonicalName, $0.1) })
            self.body = notModified ? nil : body
        }
    }

    /// The answer to a request with these headers: 304 when `If-None-Match` names this version,
    /// gzip when `Accept-Encoding` accepts it. A HEAD sends the answer without its body.
    func answer(acceptEncoding: String?, ifNoneMatch: String?) -> Answer {
        let gzip = Self.acceptsGzip(acceptEncoding)
        let notModified = ifNoneMatch.map { Self.matches($0, etag: etag, gzipETag: gzipETag) } ?? false
        return answers[Self.index(gzip: gzip, notModified: notModified)]
    }

    private static func index(gzip: Bool, notModified: Bool) -> Int {
        (gzip ? 2 : 0) + (notModified ? 1 : 0)
    }

    /// The answer to `request` as a router response.
    func response(to request: Request) -> Response {
        let answer = answer(
            acceptEncoding: request.headers[.acceptEncoding], ifNoneMatch: request.headers[.ifNoneMatch])
        let body = request.method == .head ? nil : answer.body
        return Response(
            status: answer.status, headers: answer.fields,
            body: body.map { ResponseBody(byteBuffer: $0) } ?? ResponseBody())
    }

    /// Whether an `If-None-Match` list names either variant of this version (weak comparison, RFC 9110).
    static func matches(_ header: String, etag: String, gzipETag: String) -> Bool {
        // The common case, a phone sending back the one tag it was given, without parsing a list.
        if header == etag || header == gzipETag { return true }
        return header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingSpaces
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag || tag == gzipETag
        }
    }

    /// Whether `Accept-Encoding` accepts gzip (and does not refuse it with `q=0`). Read byte by byte,
    /// without allocating: it runs on every GET /channel.
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        let bytes = header.utf8
        var accepted = false
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
            if let gzip = gzipCoding(bytes[start..<end]) { accepted = accepted || gzip }
            start = end == bytes.endIndex ? end : bytes.index(after: end)
        }
        return accepted
    }

    /// For one `coding;parameters` item of `Accept-Encoding`: nil when it is not gzip, else whether
    /// it accepts gzip (no `q=0`).
    private static func gzipCoding(_ item: Substring.UTF8View) -> Bool? {
        let nameEnd = item.firstIndex(of: UInt8(ascii: ";")) ?? item.endIndex
        let name = item[item.startIndex..<nameEnd].trimmingWhitespace
        guard name.equalsIgnoringCase("gzip") || name.equalsIgnoringCase("x-gzip") else { return nil }
        var start = nameEnd
        while start < item.endIndex {
            start = item.index(after: start)
            let end = item[start...].firstIndex(of: UInt8(ascii: ";")) ?? item.endIndex
            if isZeroQuality(item[start..<end]) { return false }
            start = end
        }
        return true
    }

    /// Whether a parameter is `q=0` (or `q=0.0`, `Q = 0.000`, ...).
    private static func isZeroQuality(_ parameter: Substring.UTF8View) -> Bool {
        var bytes = parameter.trimmingWhitespace.makeIterator()
        guard let q = bytes.next(), q | 0x20 == UInt8(ascii: "q") else { return false }
        var sawEquals = false, sawZero = false, sawDot = false
        while let byte = bytes.next() {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"): if sawZero { return false }
            case UInt8(ascii: "=") where !sawEquals: sawEquals = true
            case UInt8(ascii: "0") where sawEquals: sawZero = true
            case UInt8(ascii: ".") where sawZero && !sawDot: sawDot = true
            default: return false
            }
        }
        return sawZero
    }
}

extension Substring.UTF8View {
    /// The bytes without leading and trailing spaces and tabs.
    var trimmingWhitespace: Substring.UTF8View {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }

    /// Whether these bytes spell `lowercase` (ASCII letters compared without case).
    func equalsIgnoringCase(_ lowercase: StaticString) -> Bool {
        guard count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            zip(self, expected).allSatisfy {
                $0 == $1 || ($0 | 0x20 == $1 && $1 >= UInt8(ascii: "a") && $1 <= UInt8(ascii: "z"))
            }
        }
    }
}
