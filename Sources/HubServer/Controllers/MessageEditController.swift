import DAO
import HubCore
import Hummingbird
import Mongo

/// Correcting and withdrawing a sent message (its sender, admins): PUT and DELETE /message/:msiKey, through
/// `MessageService.correct` and `.withdraw`, which also tell the phones.
struct MessageEditController {
    let services: HubServices

    /// The longest reason a withdrawal records.
    static let maximumReason = 1_000

    /// The routes, for senders.
    func addRoutes(to senders: RouterGroup<HubRequestContext>) {
        senders.put("/message/:msiKey", use: correct)
        senders.delete("/message/:msiKey", use: withdraw)
    }

    /// PUT /message/:msiKey `{"title"?, "desc"?, "message"?, "translations"?}`: replaces those texts (the send rules
    /// of POST /message), records the correction and relays it; 200 with the message as stored. 202 when the new text
    /// waits for a second person (a held message corrected by its author, or a correction of an approved message:
    /// `pending_correction`); 409 `approval_pending` for anyone else's correction of a held message.
    @Sendable func correct(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let msiKey = try context.parameters.objectID("msiKey")
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let allowed: Set = ["title", "desc", "message", "translations"]
        if let unknown = fields.document.elements.map(\.key).first(where: { !allowed.contains($0) }) {
            throw HubError.invalid(
                .invalidField, "a correction has no field \"\(unknown)\" (title, desc, message, translations)")
        }
        let correction = MessageCorrection(
            title: try fields.optionalString("title", maxLength: .max),
            desc: try fields.optionalString("desc", maxLength: .max),
            message: try fields.optionalString("message", maxLength: .max),
            translations: fields.document["translations"])
        guard
            correction.title != nil || correction.desc != nil || correction.message != nil
                || correction.translations != nil
        else {
            throw HubError.invalid(
                .missingField, "a correction gives at least one of title, desc, message, translations")
        }
        let result = try await Self.mapped {
            try await services.messages.correct(msiKey: msiKey, with: correction, as: identity)
        }
        return JSONResponse.make(.document(result.message.document), status: result.awaitsApproval ? .accepted : .ok)
    }

    /// DELETE /message/:msiKey (optional body `{"reason"}` or `?reason=`): withdraws the message; 200 with the message
    /// as stored (its `withdrawn`).
    @Sendable func withdraw(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let msiKey = try context.parameters.objectID("msiKey")
        var reason = request.uri.queryParameters.get("reason")
        if request.headers[.contentType] != nil {
            var request = request
            let fields = FieldReader(document: try await request.jsonObject(context: context))
            reason = try fields.optionalString("reason", maxLength: Self.maximumReason) ?? reason
        }
        if let given = reason, given.utf8.count > Self.maximumReason {
            throw HubError.invalid(.fieldTooLong, "the reason is longer than \(Self.maximumReason) bytes")
        }
        let message = try await Self.mapped {
            try await services.messages.withdraw(msiKey: msiKey, reason: reason, as: identity)
        }
        return JSONResponse.make(.document(message.document))
    }

    /// Runs `body`, its `EditRefusal` answered as 403 `forbidden` or 409 (`message_withdrawn`, `conflict`,
    /// `approval_pending`).
    static func mapped<T>(_ body: () async throws -> T) async throws -> T {
        try await EditRefusalMapping.mapped(body)
    }
}

/// How every route answers an `EditRefusal`: once, here.
enum EditRefusalMapping {
    /// Runs `body`, its `EditRefusal` answered as 403 `forbidden` or 409 (`message_withdrawn`, `conflict`,
    /// `approval_pending`).
    static func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let refusal as EditRefusal {
            switch refusal.code {
            case .notYours: throw HubError(.forbidden, .forbidden, refusal.message)
            case .withdrawn: throw HubError(.conflict, .messageWithdrawn, refusal.message)
            case .sending: throw HubError(.conflict, .conflict, refusal.message)
            case .approvalPending: throw HubError(.conflict, .approvalPending, refusal.message)
            }
        }
    }
}
