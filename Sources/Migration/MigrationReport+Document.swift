import Mongo

extension MigrationReport {
    /// The report as a document: what the `migrations` collection stores and `--json` prints.
    public var document: BSONDocument {
        var collections: [(key: String, value: BSONValue)] = []
        for collection in counts.keys.sorted() {
            let counts = self.counts(collection)
            collections.append(
                (
                    collection,
                    [
                        "read": .int64(Int64(counts.read)), "inserted": .int64(Int64(counts.inserted)),
                        "unchanged": .int64(Int64(counts.unchanged)), "conflicts": .int64(Int64(counts.conflicts)),
                    ]
                ))
        }
        let ruleCounts = NormalisationRule.allCases.map {
            (key: $0.key, value: BSONValue.int64(Int64(rules.count($0))))
        }
        let unknown = rules.unknownFields.sorted { $0.key < $1.key }
            .map { (key: $0.key.replacingDots, value: BSONValue.int64(Int64($0.value))) }
        var elements: [(key: String, value: BSONValue)] = [
            ("source", .string(source)),
            ("dry_run", .bool(dryRun)),
            ("completed", .bool(completed)),
            ("resumed_interrupted_run", .bool(resumedInterruptedRun)),
            ("seconds", .double(seconds)),
            ("documents_per_second", .double(rate.rounded())),
            ("collections", .document(BSONDocument(collections))),
            ("rules", .document(BSONDocument(ruleCounts))),
            ("unknown_fields", .document(BSONDocument(unknown))),
            ("conflict_count", .int64(Int64(conflictCount))),
            (
                "conflicts",
                .array(
                    conflicts.map {
                        [
                            "collection": .string($0.collection), "_id": .string($0.id),
                            "reason": .string($0.reason.rawValue),
                        ]
                    })
            ),
        ]
        if let verification {
            elements.append(
                (
                    "verification",
                    [
                        "passed": .bool(verification.passed),
                        "checked": .int64(Int64(verification.checked)),
                        "matching": .int64(Int64(verification.matching)),
                        "extra": .int64(Int64(verification.extra)),
                        "mismatches": .array(verification.mismatches.map(BSONValue.string)),
                        "missing": .array(verification.missing.map(BSONValue.string)),
                    ]
                ))
        }
        return BSONDocument(elements)
    }
}

extension String {
    /// The path with its dots as `/`: a stored key may not contain a dot.
    fileprivate var replacingDots: String {
        split(separator: ".", omittingEmptySubsequences: false).joined(separator: "/")
    }
}
