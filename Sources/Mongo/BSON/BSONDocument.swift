import CMongo

/// A BSON document: the bytes of one, validated, owned, and copy-on-write.
///
/// The document is a plain Swift value over its bytes, so it is `Sendable` as it stands; a C
/// pointer to it lives only inside `withBSONPointer`, where libbson reads the bytes in place.
/// Keys keep their order. Reading a key iterates the bytes; setting one rebuilds them.
public struct BSONDocument: Sendable, Equatable, CustomStringConvertible {
    /// The document's bytes, as they go on the wire.
    public private(set) var bytes: [UInt8]

    /// The empty document.
    public init() {
        self.bytes = [5, 0, 0, 0, 0]
    }

    /// A document over bytes received from anywhere.
    /// - Throws: `MongoError.Code.invalidBSON` when the bytes are truncated, corrupt or not UTF-8.
    public init(bytes: [UInt8]) throws {
        try Self.validate(bytes)
        self.bytes = bytes
    }

    /// Bytes that libbson already validated (a sub-document of a valid one, or libbson's own output).
    init(trustedBytes bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// A copy of a `bson_t` that libmongoc owns (a reply, a cursor's current document).
    init(copying pointer: OpaquePointer) {
        let length = Int(cmongo_bson_len(pointer))
        self.bytes = Array(UnsafeBufferPointer(start: cmongo_bson_data(pointer), count: length))
    }

    /// A document of these elements, in this order.
    /// - Precondition: no key contains NUL (keys from input are checked by the JSON parser).
    public init(_ elements: some Sequence<(key: String, value: BSONValue)>) {
        do {
            self = try BSONWriter.document(elements)
        } catch {
            preconditionFailure("cannot encode document: \(error)")
        }
    }

    /// Calls `body` with a `bson_t` that reads this document's bytes in place.
    ///
    /// The pointer must not escape `body`: it points into this value's storage.
    func withBSONPointer<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try bytes.withUnsafeBufferPointer { buffer in
            try CStorage.withBSON { bson in
                // The bytes were validated when this value was made, so libbson's header checks pass.
                guard bson_init_static(bson, buffer.baseAddress, buffer.count) else {
                    preconditionFailure("BSONDocument holds bytes libbson refuses")
                }
                return try body(bson)
            }
        }
    }

    /// The number of top-level keys.
    public var count: Int {
        Int(withBSONPointer { bson_count_keys($0) })
    }

    /// True when the document has no keys.
    public var isEmpty: Bool { bytes.count <= 5 }

    /// The top-level keys in order.
    public var keys: [String] { elements.map(\.key) }

    /// The top-level elements in order.
    public var elements: [(key: String, value: BSONValue)] {
        BSONReader.elements(of: self)
    }

    /// The value of `key`, or nil. Setting nil removes the key; setting a new key appends it.
    public subscript(key: String) -> BSONValue? {
        get { BSONReader.value(of: key, in: self) }
        set {
            var elements = self.elements
            if let index = elements.firstIndex(where: { $0.key == key }) {
                if let newValue { elements[index].value = newValue } else { elements.remove(at: index) }
            } else if let newValue {
                elements.append((key: key, value: newValue))
            }
            self = BSONDocument(elements)
        }
    }

    /// The value at a dotted path ("opt.level"), descending through documents.
    public subscript(path path: String) -> BSONValue? {
        var current: BSONValue = .document(self)
        for part in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard case .document(let document) = current, let next = document[String(part)] else { return nil }
            current = next
        }
        return current
    }

    /// Whether the document has `key` at the top level.
    public func contains(_ key: String) -> Bool { self[key] != nil }

    /// A copy with `key` set to `value`, placed first when new (as MongoDB likes `_id`).
    public func prepending(_ key: String, _ value: BSONValue) -> BSONDocument {
        var elements = self.elements.filter { $0.key != key }
        elements.insert((key: key, value: value), at: 0)
        return BSONDocument(elements)
    }

    public var description: String { extendedJSON(.relaxed) }

    public static func == (lhs: BSONDocument, rhs: BSONDocument) -> Bool { lhs.bytes == rhs.bytes }

    private static func validate(_ bytes: [UInt8]) throws {
        _ = MongoLibrary.initialized
        let valid = bytes.withUnsafeBufferPointer { buffer in
            CStorage.withBSON { bson -> Bool in
                guard buffer.count >= 5, bson_init_static(bson, buffer.baseAddress, buffer.count) else {
                    return false
                }
                var offset = 0
                let flags = bson_validate_flags_t(
                    rawValue: BSON_VALIDATE_UTF8.rawValue | BSON_VALIDATE_UTF8_ALLOW_NULL.rawValue)
                // libbson 1.23 lets some malformed UTF-8 through, so strings get a second, strict look.
                return bson_validate(bson, flags, &offset) && UTF8Check.isValid(document: bson)
            }
        }
        guard valid else { throw MongoError(.invalidBSON, "bytes are not a valid BSON document") }
    }
}

extension BSONDocument: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, BSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension BSONDocument: Sequence {
    public func makeIterator() -> IndexingIterator<[(key: String, value: BSONValue)]> {
        elements.makeIterator()
    }
}
