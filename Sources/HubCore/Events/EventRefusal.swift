/// Why an event request was refused: a code each adapter maps once; the message names the field at fault.
public typealias EventRefusal = Refusal<EventRefusalCode>

/// The codes of an `EventRefusal`.
public struct EventRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case eventNotFound, occurrenceNotFound, invalidSchedule, invalidID, editConflict
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// No event has the id.
    public static let eventNotFound = EventRefusalCode(.eventNotFound)
    /// The event has no occurrence on the date given.
    public static let occurrenceNotFound = EventRefusalCode(.occurrenceNotFound)
    /// A time, zone, recurrence, exception date or reminder that breaks the rules of `EventSchedule`.
    public static let invalidSchedule = EventRefusalCode(.invalidSchedule)
    /// An event id or date that is not one.
    public static let invalidID = EventRefusalCode(.invalidID)
    /// The event changed while the edit was made (another edit, a reminder's record): try again.
    public static let editConflict = EventRefusalCode(.editConflict)

    public var description: String { value.rawValue }
}
