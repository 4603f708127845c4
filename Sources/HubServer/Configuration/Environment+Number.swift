extension [String: String] {
    /// The whole number the variable `name` of this environment holds; nil when it is unset or empty.
    /// - Throws: `ConfigurationError` naming the variable when its value is not a whole number within `range`.
    func number(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = self[name], !text.isEmpty else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(
                "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(text)\"")
        }
        return value
    }
}
