extension Duration {
    /// The duration in whole milliseconds, rounded up, so a positive wait or time-out never becomes 0; the way
    /// back is the standard library's `Duration.milliseconds(_:)`.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}
