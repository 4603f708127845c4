import Mongo

extension DeviceDAO {
    /// How many active devices are bound to one of `persons` (distinct ids): the registered devices a message to
    /// them reaches, for the portal's send form. Counted on the `person` index, `IDChunks.perCommand` persons a
    /// command, without reading a device.
    /// - Throws: `DAOError`.
    public func activeCount(ofPersons persons: [String]) async throws -> Int {
        var count: Int64 = 0
        for chunk in IDChunks.of(persons) {
            count += try await mapErrors {
                try await collection.countDocuments([
                    "person": ["$in": .array(chunk.map(BSONValue.string))],
                    "state": "active",
                ])
            }
        }
        return Int(count)
    }
}
