extension Duration {
    /// The duration in whole milliseconds (rounded down), as the DAOs count time.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
