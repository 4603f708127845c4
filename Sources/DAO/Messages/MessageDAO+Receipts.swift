import Mongo

extension MessageDAO {
    /// The messages whose `msi_key` is one of `msiKeys`, by `msi_key` (unknown keys are absent): a batch of receipts'
    /// messages in one query on the `msi_key` index, `IDChunks.perCommand` keys a command.
    /// - Throws: `DAOError`.
    public func messages(msiKeys: [ObjectID]) async throws -> [ObjectID: Message] {
        var found: [ObjectID: Message] = [:]
        for chunk in IDChunks.of(msiKeys) {
            let documents = try await mapErrors { try await collection.find(["msi_key": IDChunks.membership(chunk)]) }
            for document in documents {
                if let message = Message(document: document) { found[message.msiKey] = message }
            }
        }
        return found
    }
}
