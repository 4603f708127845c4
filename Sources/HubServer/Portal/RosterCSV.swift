import Foundation
import HubCore

/// A roster uploaded as a CSV file: one person id a line. Blank lines are skipped, and so is a first line `person`
/// (a header); a line in double quotes is read as CSV quotes it (`""` is one `"`). Each id is checked by the rule of
/// `GroupService`, so problems can be shown by line number before anything is written.
struct RosterCSV {
    /// The person ids, in file order.
    var persons: [String] = []
    /// Problems with their line numbers (1-based), at most `maximumProblems` of them.
    var problems: [String] = []
    /// How many lines had a problem in all (more than `problems` lists when many do).
    var problemCount = 0

    /// The most problems listed: beyond a few, the file is wrong as a whole.
    static let maximumProblems = 5

    /// Reads `text` (a UTF-8 byte order mark, CRLF or LF line ends allowed).
    init(_ text: String) {
        var text = Substring(text)
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        var sawLine = false
        // Split on "\n" scalars: a CRLF is one Character in Swift, so splitting Characters would miss it.
        let lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, scalars) in lines.enumerated() {
            let line = String(String.UnicodeScalarView(scalars)).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !line.isEmpty else { continue }
            defer { sawLine = true }
            if !sawLine, line.lowercased() == "person" || line.lowercased() == "\"person\"" { continue }
            let person = Self.unquoted(line)
            if let problem = GroupService.personIDProblem(person) {
                problemCount += 1
                if problems.count < Self.maximumProblems { problems.append("Line \(index + 1): \(problem).") }
            } else {
                persons.append(person)
            }
        }
    }

    /// A CSV field in double quotes without them (`""` inside is one `"`); any other line as it is.
    private static func unquoted(_ line: String) -> String {
        guard line.count >= 2, line.hasPrefix("\""), line.hasSuffix("\"") else { return line }
        return String(line.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
    }
}
