import Foundation

/// How a run shows its progress.
public enum ProgressStyle: Sendable {
    /// A bar redrawn in place when standard output is a terminal, plain periodic lines otherwise.
    case automatic
    /// A bar redrawn in place (for terminals).
    case bar
    /// A line every `interval` (for logs and pipes).
    case lines
    /// Nothing.
    case none
}

/// Draws a run's progress: documents done, percent when known, and the rate.
struct ProgressDisplay {
    private enum Resolved { case bar, lines, none }

    private let style: Resolved
    private let interval: Duration
    private let output: @Sendable (String) -> Void
    private let clock = ContinuousClock()
    private var started: ContinuousClock.Instant
    private var lastDrawn: ContinuousClock.Instant?

    /// A display in `style`, writing through `output` (standard output by default).
    init(style: ProgressStyle, interval: Duration, output: (@Sendable (String) -> Void)? = nil) {
        switch style {
        case .automatic: self.style = isatty(STDOUT_FILENO) == 1 ? .bar : .lines
        case .bar: self.style = .bar
        case .lines: self.style = .lines
        case .none: self.style = .none
        }
        self.interval = style == .bar || (style == .automatic && self.style == .bar) ? .milliseconds(100) : interval
        self.output = output ?? { text in FileHandle.standardOutput.write(Data(text.utf8)) }
        self.started = clock.now
    }

    /// Starts timing a collection.
    mutating func begin() {
        started = clock.now
        lastDrawn = nil
    }

    /// Shows `documents` done of `collection`, at most once per interval unless `final`.
    mutating func update(_ collection: String, documents: Int, fraction: Double?, final: Bool = false) {
        guard style != .none else { return }
        let now = clock.now
        if !final, let lastDrawn, now - lastDrawn < interval { return }
        lastDrawn = now
        let seconds = max(
            0.001,
            Double((now - started).components.attoseconds) / 1e18
                + Double((now - started).components.seconds))
        let rate = Int((Double(documents) / seconds).rounded())
        let percent = fraction.map { " \(Int(($0 * 100).rounded(.down)))%" } ?? ""
        switch style {
        case .bar:
            let width = 30
            let filled = Int((fraction ?? 0) * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let line = "\r\u{1B}[2K\(collection) [\(bar)]\(percent) \(documents) documents, \(rate)/s"
            output(final ? line + "\n" : line)
        case .lines:
            output("\(collection): \(documents) documents\(percent), \(rate)/s\(final ? ", done" : "")\n")
        case .none:
            break
        }
    }
}
