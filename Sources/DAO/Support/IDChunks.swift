import Mongo

/// How many ids one command names in `_id: {$in: [...]}`, and the slicing that keeps to it: a server may match the
/// whole list against every document it considers (SecantusDB does), so a list of thousands costs it quadratically,
/// while slices of 64 cost about as much per id as one-document commands without their per-command overhead.
enum IDChunks {
    /// The most ids one command names.
    static let perCommand = 64

    /// `ids` in slices of at most `perCommand`.
    static func of<C: RandomAccessCollection>(_ ids: C) -> [C.SubSequence] where C.Index == Int {
        stride(from: ids.startIndex, to: ids.endIndex, by: perCommand).map {
            ids[$0..<min($0 + perCommand, ids.endIndex)]
        }
    }

    /// `{"$in": ids}`.
    static func membership<S: Sequence>(_ ids: S) -> BSONValue where S.Element == ObjectID {
        ["$in": .array(ids.map(BSONValue.objectID))]
    }
}
