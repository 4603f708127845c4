import Foundation

/// The fields of a `multipart/form-data` body (RFC 7578), which forms with a file input send: each part's `name`
/// and its content as text (a file's too; the portal's files are CSV text). Only what a browser sends is read:
/// parts without a name are skipped, and nested multiparts are not opened.
enum MultipartForm {
    /// The most bytes a portal form with a file may have (a roster of 10,000 long person ids fits).
    static let maximumSize = 2 * 1024 * 1024

    /// The boundary named by a `multipart/form-data` content type, or nil when it is not one or names none.
    static func boundary(contentType: String) -> String? {
        let parameters = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parameters.first?.lowercased() == "multipart/form-data" else { return nil }
        for parameter in parameters.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            var value = pair[1]
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            // RFC 2046: 1 to 70 characters.
            return (1...70).contains(value.utf8.count) ? value : nil
        }
        return nil
    }

    /// The named parts of `body`, in order, as (name, text) pairs; nil when the body is not a multipart with this
    /// boundary (no closing delimiter, a part without headers).
    static func fields(of body: [UInt8], boundary: String) -> [(name: String, value: String)]? {
        let delimiter = Array("\r\n--\(boundary)".utf8)
        // The first delimiter has no line break before it: one is put there, so every delimiter looks alike.
        let bytes = Array("\r\n".utf8) + body
        var fields: [(name: String, value: String)] = []
        guard var start = firstIndex(of: delimiter, in: bytes, from: 0) else { return nil }
        start += delimiter.count
        while true {
            // After a delimiter: "--" ends the body; otherwise the rest of the line (white space) and a part.
            if bytes[start...].starts(with: Array("--".utf8)) { return fields }
            guard let lineEnd = firstIndex(of: Array("\r\n".utf8), in: bytes, from: start),
                let headersEnd = firstIndex(of: Array("\r\n\r\n".utf8), in: bytes, from: lineEnd),
                let next = firstIndex(of: delimiter, in: bytes, from: headersEnd + 4)
            else { return nil }
            let headers = String(decoding: bytes[(lineEnd + 2)..<headersEnd], as: UTF8.self)
            if let name = name(inHeaders: headers) {
                fields.append((name, String(decoding: bytes[(headersEnd + 4)..<next], as: UTF8.self)))
            }
            start = next + delimiter.count
        }
    }

    /// The `name` parameter of a part's `Content-Disposition: form-data` header.
    private static func name(inHeaders headers: String) -> String? {
        for line in headers.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "content-disposition"
            else { continue }
            for parameter in parts[1].split(separator: ";").dropFirst() {
                let pair = parameter.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].lowercased() == "name" else { continue }
                var value = String(pair[1])
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                    value = String(value.dropFirst().dropLast())
                }
                return value
            }
        }
        return nil
    }

    /// Where `needle` first occurs in `bytes` at or after `from`.
    private static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, from <= bytes.count - needle.count else { return nil }
        let first = needle[0]
        var index = from
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
