/// A source document that was not written, and why.
public struct MigrationConflict: Sendable, Equatable {
    /// Why a document was not written.
    public enum Reason: String, Sendable {
        /// The target holds a document with this `_id` and different content; the target's is kept.
        case targetDiffers = "target_differs"
        /// Two source documents have the same `_id` once normalised (a hex string and its ObjectId);
        /// the first one read was written.
        case duplicateID = "duplicate_id"
        /// A unique index of the target (a message's `msi_key`) already holds this value.
        case duplicateKey = "duplicate_key"
    }

    /// The collection of the document.
    public var collection: String
    /// The document's `_id` as the legacy JSON shows it.
    public var id: String
    /// Why it was not written.
    public var reason: Reason

    /// A conflict of the document `id` in `collection`.
    public init(collection: String, id: String, reason: Reason) {
        self.collection = collection
        self.id = id
        self.reason = reason
    }
}
