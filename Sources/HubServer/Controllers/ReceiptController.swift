import DAO
import HubCore
import Hummingbird
import Mongo

/// Receipts: a device posts what became of its messages (`POST /device/:deviceID/receipts`, with its secret), and a
/// message's sender and admins read its reach (`GET /message/:msiKey/receipts`; anyone else gets 404, as for the
/// message). `ReceiptService` holds the rules.
struct ReceiptController {
    let services: HubServices

    /// The largest body of receipts: `ReceiptService.maximumBatch` entries with responses of multi-byte characters.
    static let maximumBody = 512 * 1024

    /// The device's route on `router`, the report on `senders` (communicators and admins).
    func addRoutes(to router: Router<HubRequestContext>, senders: RouterGroup<HubRequestContext>) {
        router.post("/device/:deviceID/receipts", use: record)
        senders.get("/message/:msiKey/receipts", use: report)
    }

    /// POST /device/:deviceID/receipts: `[{"msi_key", "event", "response"?, "at"}]` (at most 500) → 200
    /// `{"results": [{"index", "status", "code"?}]}`; a malformed body is 422 and stores nothing.
    @Sendable func record(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await services.devices.authenticate(
            try context.parameters.objectID("deviceID"),
            secret: context.deviceSecret)
        var request = request
        let entries = try Self.entries(try await request.jsonValue(context: context, maxSize: Self.maximumBody))
        let outcomes = try await services.receipts.record(entries, from: device)
        return JSONResponse.make([
            "results": .array(
                outcomes.map { outcome in
                    var document: BSONDocument = [
                        "index": .int64(Int64(outcome.index)), "status": .string(outcome.status.rawValue),
                    ]
                    if let code = outcome.code { document["code"] = .string(code.description) }
                    return .document(document)
                })
        ])
    }

    /// The entries of a body of receipts.
    /// - Throws: `HubError` 422 when the body is not an array of at most `maximumBatch` well-formed entries.
    static func entries(_ body: BSONValue) throws -> [ReceiptEntry] {
        guard let array = body.arrayValue else {
            throw HubError.invalid(.invalidBody, "the body must be a JSON array of receipts")
        }
        guard array.count <= ReceiptService.maximumBatch else {
            throw HubError.invalid(.invalidBody, "a batch holds at most \(ReceiptService.maximumBatch) receipts")
        }
        return try array.enumerated().map { index, element in
            guard let entry = element.documentValue else {
                throw HubError.invalid(.invalidField, "receipt [\(index)] must be an object")
            }
            guard let key = entry["msi_key"]?.stringValue, (1...100).contains(key.utf8.count) else {
                throw HubError.invalid(.invalidField, "receipt [\(index)]: \"msi_key\" must be a message's msi_key")
            }
            guard let event = entry["event"]?.stringValue.flatMap(Receipt.Event.init(rawValue:)) else {
                throw HubError.invalid(
                    .invalidField,
                    "receipt [\(index)]: \"event\" must be \"received\", \"opened\" or \"acknowledged\"")
            }
            var response: String?
            if let value = entry["response"], !value.isNull {
                guard let text = value.stringValue else {
                    throw HubError.invalid(.invalidField, "receipt [\(index)]: \"response\" must be a string")
                }
                guard text.utf8.count <= ReceiptService.maximumResponseBytes else {
                    throw HubError.invalid(
                        .fieldTooLong,
                        "receipt [\(index)]: \"response\" is longer than "
                            + "\(ReceiptService.maximumResponseBytes) bytes of UTF-8")
                }
                response = text
            }
            guard let at = entry["at"]?.int64Value, at > 0 else {
                throw HubError.invalid(.invalidField, "receipt [\(index)]: \"at\" must be a time in Unix milliseconds")
            }
            return ReceiptEntry(msiKey: key, event: event, response: response, at: at)
        }
    }

    /// GET /message/:msiKey/receipts?cursor=&limit=: the reach report (see openapi.json).
    @Sendable func report(request: Request, context: HubRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let limit = try PageQuery.limit(
            query, default: ReceiptService.defaultLimit, maximum: ReceiptService.maximumLimit)
        let cursor = try PageQuery.cursor(query) { ObjectID(hex: $0) }
        let report = try await services.receipts.report(
            msiKey: try context.parameters.objectID("msiKey"),
            for: context.messageViewer, cursor: cursor, limit: limit)
        return JSONResponse.make(.document(Self.document(report)))
    }

    /// The report as the route answers it.
    static func document(_ report: ReceiptReport) -> BSONDocument {
        let counts = report.counts
        func count(_ event: Receipt.Event) -> BSONValue { .int64(counts.byEvent[event] ?? 0) }
        var document: BSONDocument = [
            "msi_key": .string(report.msiKey.hex), "audience_kind": .string(report.audienceKind),
            "audience": .int64(report.audience), "relay_state": .string(report.relayState),
            "fcm_accepted": .int64(report.fcmAccepted), "received": count(.received), "opened": count(.opened),
            "acknowledged": count(.acknowledged),
            "responses": .document(
                BSONDocument(
                    counts.responses.sorted { $0.key < $1.key }
                        .map { (key: $0.key, value: .int64($0.value)) })),
            "free_text_responses": .int64(counts.freeText),
            "not_answered": .int64(report.notAnswered), "unreachable": .int64(report.unreachable),
            "held": .int64(report.held),
            "platforms": .document(
                BSONDocument(
                    report.platforms.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                        (
                            key: $0.key.rawValue,
                            value: [
                                "audience": .int64($0.value.audience), "received": .int64($0.value.received),
                                "opened": .int64($0.value.opened),
                                "acknowledged": .int64($0.value.acknowledged),
                            ]
                        )
                    })),
        ]
        for (key, named) in [("channel", report.channel), ("area", report.area)] {
            guard let named else { continue }
            document[key] = ["id": .string(named.id), "name": named.name.map(BSONValue.string) ?? .null]
        }
        if let persons = report.persons {
            var reach: BSONDocument = [
                "audience": .int64(persons.audience), "acknowledged": .int64(persons.acknowledged),
                "not_answered": .int64(max(0, persons.audience - persons.acknowledged)),
            ]
            // Only for an invitation whose answers may change: each person's answer as it now is.
            if let responses = persons.responses {
                reach["responses"] = .document(
                    BSONDocument(responses.sorted { $0.key < $1.key }.map { (key: $0.key, value: .int64($0.value)) }))
            }
            document["persons"] = .document(reach)
        }
        document["not_answered_devices"] = .array(
            report.silent.map { silent in
                var row: BSONDocument = ["device": .string(silent.device.hex)]
                if let person = silent.person { row["person"] = .string(person) }
                row["platform"] = .string(silent.platform.rawValue)
                return .document(row)
            })
        document["next"] = report.next.map(BSONValue.string) ?? .null
        return document
    }
}
