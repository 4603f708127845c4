import DAO
import Mongo

/// One receipt as a device posts it: the message's `msi_key` (as sent), the event, the person's response and when
/// it happened on the device (Unix ms).
public struct ReceiptEntry: Sendable, Equatable {
    /// The message's `msi_key` as the device sent it (24 hex digits for a message the hub knows).
    public var msiKey: String
    public var event: Receipt.Event
    /// The person's answer, with an `.acknowledged`; at most `ReceiptService.maximumResponseBytes` bytes of UTF-8.
    public var response: String?
    public var at: Int64

    public init(msiKey: String, event: Receipt.Event, response: String? = nil, at: Int64) {
        self.msiKey = msiKey
        self.event = event
        self.response = response
        self.at = at
    }
}

/// What became of one entry of a batch of receipts, at its position in the batch.
public struct ReceiptOutcome: Sendable, Equatable {
    /// Stored now, stored before (the device had reported it), or refused (`code` says why).
    public enum Status: String, Sendable {
        case stored, duplicate, rejected
    }

    public var index: Int
    public var status: Status
    /// Why the entry was refused.
    public var code: ReceiptRejection?

    public init(index: Int, status: Status, code: ReceiptRejection? = nil) {
        self.index = index
        self.status = status
        self.code = code
    }
}

/// Why one receipt of a batch was refused (the rest of the batch is stored all the same).
public struct ReceiptRejection: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case notARecipient = "not_a_recipient"
        case invalidResponse = "invalid_response"
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// The device could not have received the message: not of the topics it wanted when the message was sent, nor
    /// of its persons or groups, nor delivered to it, or not sent yet; or no message has the `msi_key` (the same
    /// answer: a device learns nothing of messages it may not see).
    public static let notARecipient = ReceiptRejection(.notARecipient)
    /// The response is not one of those the message offered, is free text too long, or came with another event
    /// than `acknowledged`.
    public static let invalidResponse = ReceiptRejection(.invalidResponse)

    /// The code on the wire (snake_case).
    public var description: String { value.rawValue }
}
