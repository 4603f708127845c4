import Foundation
import Mongo

/// Reads the documents of a `mongoexport` file one batch at a time, without holding the file in memory.
///
/// It accepts JSON lines (one document a line, as `mongoexport` writes by default), a JSON array
/// (`--jsonArray`), and documents spread over several lines (`--pretty`), in any Extended JSON form
/// that libbson parses: the legacy `{"$oid"}`, `{"$date"}`, `{"$numberLong"}` and v2 canonical or relaxed.
struct ExportFileReader {
    /// The file being read.
    let url: URL
    /// The file's size in bytes (for progress).
    let size: Int64
    /// Bytes consumed so far (for progress).
    var consumed: Int64 { offset + Int64(position) }

    private let handle: FileHandle
    private var offset: Int64 = 0
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEnd = false
    private var line = 1
    private static let chunkSize = 1 << 20

    /// Opens `url` for reading.
    /// - Throws: `MigrationError.unreadableFile`.
    init(url: URL) throws {
        self.url = url
        do {
            handle = try FileHandle(forReadingFrom: url)
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        } catch {
            throw MigrationError(.unreadableFile, "cannot open \(url.path): \(error.localizedDescription)")
        }
    }

    /// Closes the file.
    func close() { try? handle.close() }

    /// Up to `count` next documents; empty at the end of the file.
    /// - Throws: `MigrationError.invalidDocument` naming the line, or `unreadableFile`.
    mutating func next(_ count: Int) throws -> [BSONDocument] {
        var documents: [BSONDocument] = []
        while documents.count < count, let text = try nextObject() {
            do {
                documents.append(try BSONDocument(extendedJSON: text.json))
            } catch {
                throw MigrationError(
                    .invalidDocument,
                    "\(url.lastPathComponent) line \(text.line): not a document "
                        + "in Extended JSON (\((error as? MongoError)?.code.description ?? "error"))")
            }
        }
        return documents
    }

    /// The text of the next top-level object, skipping the array's brackets and commas between objects.
    private mutating func nextObject() throws -> (json: String, line: Int)? {
        // Between objects: whitespace, the array's `[` `]`, commas.
        while true {
            guard let byte = try peek() else { return nil }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: ","),
                UInt8(ascii: "["), UInt8(ascii: "]"), 0xEF, 0xBB, 0xBF:  // and a UTF-8 byte order mark
                position += 1
            case UInt8(ascii: "\n"):
                position += 1
                line += 1
            case UInt8(ascii: "{"):
                return try object()
            default:
                throw MigrationError(.invalidDocument, "\(url.lastPathComponent) line \(line): expected a document")
            }
        }
    }

    /// Reads one balanced `{...}` starting at `position`, minding strings and their escapes.
    private mutating func object() throws -> (json: String, line: Int) {
        let startLine = line
        var bytes: [UInt8] = []
        var depth = 0
        var inString = false
        var escaped = false
        while let byte = try peek() {
            position += 1
            bytes.append(byte)
            if byte == UInt8(ascii: "\n") { line += 1 }
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 { return (String(decoding: bytes, as: UTF8.self), startLine) }
            default: break
            }
        }
        throw MigrationError(
            .invalidDocument,
            "\(url.lastPathComponent) line \(startLine): the document is cut short")
    }

    /// The byte at `position`, reading the next chunk of the file when the buffer is used up.
    private mutating func peek() throws -> UInt8? {
        if position < buffer.count { return buffer[position] }
        guard !atEnd else { return nil }
        let chunk: Data?
        do {
            chunk = try handle.read(upToCount: Self.chunkSize)
        } catch {
            throw MigrationError(.unreadableFile, "cannot read \(url.path): \(error.localizedDescription)")
        }
        guard let chunk, !chunk.isEmpty else {
            atEnd = true
            return nil
        }
        offset += Int64(position)
        buffer = [UInt8](chunk)
        position = 0
        return buffer[0]
    }
}
