extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
