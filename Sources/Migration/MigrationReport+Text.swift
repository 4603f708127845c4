import Foundation

extension MigrationReport {
    /// The report for a person: counts, every rule (zeros included), conflicts, verification.
    public var text: String {
        var lines: [String] = []
        let mode = dryRun ? " (dry run: nothing was written; \"inserted\" is what would be)" : ""
        lines.append("Migration report\(mode)")
        lines.append("  source: \(source)")
        lines.append("  status: \(completed ? "completed" : "stopped before the end: run the command again to finish")")
        if resumedInterruptedRun { lines.append("  resumed: an earlier run from this source had stopped early") }
        lines.append(String(format: "  time: %.1f s, %.0f documents/s", seconds, rate))
        lines.append("Collections (read, inserted, unchanged, conflicts):")
        for collection in counts.keys.sorted() {
            let counts = self.counts(collection)
            lines.append(
                "  \(collection): \(counts.read) read, \(counts.inserted) inserted, "
                    + "\(counts.unchanged) unchanged, \(counts.conflicts) conflicts")
        }
        lines.append("Rules:")
        for rule in NormalisationRule.allCases {
            let examples = rules.examples[rule].map { " e.g. " + $0.joined(separator: "; ") } ?? ""
            lines.append("  \(rule.key): \(rules.count(rule))\(examples)")
        }
        if !rules.unknownFields.isEmpty {
            let fields = rules.unknownFields.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value))" }
            lines.append("Unknown fields kept: " + fields.joined(separator: ", "))
        }
        lines.append("Conflicts: \(conflictCount)")
        for conflict in conflicts.prefix(20) {
            lines.append("  \(conflict.collection) \(conflict.id): \(conflict.reason.rawValue)")
        }
        if conflicts.count > 20 { lines.append("  ... and \(conflictCount - 20) more") }
        if let verification {
            let outcome = verification.passed ? "passed" : "FAILED"
            lines.append(
                "Verification of GET /channel: \(outcome): \(verification.matching) of "
                    + "\(verification.checked) channels match the legacy output, "
                    + "\(verification.extra) channels only on the target")
            for mismatch in verification.mismatches { lines.append("  differs: \(mismatch)") }
            for missing in verification.missing { lines.append("  missing: \(missing)") }
        } else {
            lines.append("Verification of GET /channel: not run (no icube read, or the run stopped early)")
        }
        return lines.joined(separator: "\n")
    }
}
