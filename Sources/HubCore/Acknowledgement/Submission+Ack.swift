import DAO
import Mongo

/// The rules of `ack` (an acknowledgement asked of the recipients), the one reading every sender shares: an object of
/// `responses` (at most `maximumResponses` distinct texts of 1 to `maximumResponseLength` characters and at most
/// `ReceiptService.maximumResponseBytes` bytes, optional),
/// `within_s` (an integer from 1 to `maximumWithinSeconds`), `resend` (0 to `maximumResend`, default 0) and
/// `changeable` (a boolean, default false: a person may change their answer), nothing else.
extension MessageService.Submission {
    /// The most responses a message offers.
    public static let maximumResponses = 10
    /// The longest response, in characters.
    public static let maximumResponseLength = 100
    /// The longest wait for an acknowledgement: a week.
    public static let maximumWithinSeconds: Int64 = 7 * 24 * 3600
    /// The most re-sends to a silent device.
    public static let maximumResend: Int64 = 10

    /// The acknowledgement a sender's `ack` value asks for; nil when absent or null.
    /// - Throws: `SendRefusal.invalidAck` naming the rule broken.
    public static func ack(from value: BSONValue?) throws -> AckRequest? {
        guard let value, !value.isNull else { return nil }
        func refuse(_ problem: String) -> SendRefusal { SendRefusal(.invalidAck, "the field \"ack\" \(problem)") }
        guard let object = value.documentValue else { throw refuse("must be an object") }
        if let unknown = object.elements.map(\.key).first(where: {
            !["responses", "within_s", "resend", "changeable"].contains($0)
        }) {
            throw refuse("has no field \"\(unknown)\" (responses, within_s, resend, changeable)")
        }
        var changeable = false
        if let value = object["changeable"], !value.isNull {
            guard let flag = value.boolValue else { throw refuse("must have \"changeable\" as true or false") }
            changeable = flag
        }
        var responses: [String] = []
        if let list = object["responses"], !list.isNull {
            guard let items = list.arrayValue, case let texts = items.compactMap(\.stringValue),
                texts.count == items.count
            else { throw refuse("must have \"responses\" as an array of strings") }
            guard texts.count <= maximumResponses else { throw refuse("offers at most \(maximumResponses) responses") }
            // A device answers with the response itself, which a receipt carries in at most 200 bytes.
            guard
                texts.allSatisfy({
                    (1...maximumResponseLength).contains($0.count)
                        && $0.utf8.count <= ReceiptService.maximumResponseBytes
                })
            else {
                throw refuse(
                    "has responses of 1 to \(maximumResponseLength) characters and at most "
                        + "\(ReceiptService.maximumResponseBytes) bytes of UTF-8")
            }
            guard Set(texts).count == texts.count else { throw refuse("has each response once") }
            responses = texts
        }
        guard let within = object["within_s"], !within.isNull else { throw refuse("must have \"within_s\"") }
        guard within.isInteger, let seconds = within.int64Value, (1...maximumWithinSeconds).contains(seconds) else {
            throw refuse("must have \"within_s\" as an integer from 1 to \(maximumWithinSeconds)")
        }
        var resend: Int64 = 0
        if let value = object["resend"], !value.isNull {
            guard value.isInteger, let count = value.int64Value, (0...maximumResend).contains(count) else {
                throw refuse("must have \"resend\" as an integer from 0 to \(maximumResend)")
            }
            resend = count
        }
        return AckRequest(responses: responses, withinSeconds: seconds, resend: resend, changeable: changeable)
    }
}

extension BSONValue {
    /// Whether the value is an integer as JSON gives it (a number without a fraction).
    fileprivate var isInteger: Bool {
        switch self {
        case .int32, .int64: true
        case .double(let value): value.rounded() == value
        default: false
        }
    }
}
