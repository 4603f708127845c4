import Foundation

/// The fields of a submitted `application/x-www-form-urlencoded` form.
struct PortalForm: Sendable {
    private var fields: [String: [String]] = [:]

    init() {}

    /// Parses an urlencoded body (`+` is a space; malformed escapes are kept as written; a textarea's CRLF line
    /// ends become LF, as phones store them).
    init(urlencoded body: String) {
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(parts[0])
            let value = parts.count > 1 ? Self.decode(parts[1]) : ""
            fields[name, default: []].append(value)
        }
    }

    /// The fields of a multipart form (`MultipartForm.fields`), in order; a file's field holds its text.
    init(fields pairs: [(name: String, value: String)]) {
        for (name, value) in pairs { fields[name, default: []].append(value) }
    }

    /// The first value of `name`, or nil when the form has no such field.
    subscript(_ name: String) -> String? { fields[name]?.first }

    /// Every value of `name`, in the order sent (the rows a form repeats a field in); empty when absent.
    func all(_ name: String) -> [String] { fields[name] ?? [] }

    /// The first value of `name` with surrounding white space removed; "" when absent.
    func trimmed(_ name: String) -> String {
        (self[name] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func decode(_ text: Substring) -> String {
        let plus = text.replacingOccurrences(of: "+", with: " ")
        return (plus.removingPercentEncoding ?? plus).replacingOccurrences(of: "\r\n", with: "\n")
    }
}
