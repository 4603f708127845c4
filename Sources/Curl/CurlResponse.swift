/// One HTTP header field.
public struct HTTPHeader: Sendable, Hashable {
    /// The field name, as sent or received.
    public var name: String
    /// The field value, without surrounding white space.
    public var value: String

    /// A header field `name: value`.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// Whether the field can go on the wire: a token name, and no line break in either part.
    var isValid: Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") }
            && !value.utf8.contains { $0 == 10 || $0 == 13 || $0 == 0 }
    }
}

/// A complete HTTP response as the client received it.
public struct CurlResponse: Sendable, Hashable {
    /// The status code, for example 200.
    public var status: Int
    /// The header fields of the final response, in order (interim 1xx responses are dropped).
    public var headers: [HTTPHeader]
    /// The body bytes.
    public var body: [UInt8]
    /// The protocol version the server answered with: "HTTP/1.1", "HTTP/2", ...
    public var httpVersion: String
    /// Whether the request went over a connection kept alive from an earlier request.
    public var reusedConnection: Bool

    /// A response; the client makes these, tests and fakes may too.
    public init(
        status: Int,
        headers: [HTTPHeader] = [],
        body: [UInt8] = [],
        httpVersion: String = "HTTP/1.1",
        reusedConnection: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.reusedConnection = reusedConnection
    }

    /// The value of the first header field called `name` (compared case-insensitively), if any.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}
