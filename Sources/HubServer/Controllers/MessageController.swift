import DAO
import HTTPTypes
import HubCore
import HubModel
import Hummingbird
import Foundation
import Mongo

/// Messages: POST /message (the spec's route) and the history a phone catches up with.
struct MessageController {
    let services: HubServices

    /// FCM keeps a message at most 28 days.
    static let maximumTTLSeconds: Int64 = 28 * 24 * 3600
    /// How far ahead `send_at` may schedule a message.
    static let maximumScheduleMS: Int64 = 90 * 24 * 3600 * 1000

    /// The history on `router`, for everyone; sending on `senders`.
    func addRoutes(to router: Router<HubRequestContext>, senders: RouterGroup<HubRequestContext>) {
        senders.post("/message", use: send)
        router.get("/message", use: history)
        router.get("/message/:msiKey", use: get)
    }

    /// POST /message: reads the body (types and presence), sends it as the portal does (`MessageService`, which holds
    /// it to the send rules), answers 201 with the stored message. A message goes to a subject (`topic_key`) or to
    /// persons and groups (`to`), with optional `data` for the app and an optional acknowledgement asked of its
    /// recipients (`ack`: 422 `invalid_ack` when it breaks the rules of `Submission.ack(from:)`), and how phones
    /// present it (`lang`, `translations`, `image`, `kind`, `dismissible`, `expires_at`, `display`, `sample`,
    /// `cohort`: `Submission.broadcast(from:defaultLanguage:now:)`). A message the approval rule holds
    /// (`ApprovalPolicy`) answers 202 with `state` "awaiting_approval" and is sent once another person approves it;
    /// an admin's `override` (a reason) sends it at once, flagged for review (403 `override_forbidden` for others).
    @Sendable func send(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        if fields.document["recurrence"] != nil {
            return try await EventController(services: services).createSeries(fields.document, as: identity)
        }
        let submission = try Self.submission(fields, services: services)
        let message = try await services.messages.send(
            submission, as: identity,
            idempotencyKey: try Self.idempotencyKey(of: request))
        if ApprovalState.of(message, now: services.now()) == .awaitingApproval {
            let held = MessageVisibility.withState(message, .awaitingApproval)
            return JSONResponse.make(.document(held.document), status: .accepted)
        }
        if submission.override != nil { await services.approvals.recordOverride(message) }
        return JSONResponse.make(.document(message.document), status: .created)
    }

    /// The submission of a body of `POST /message` (types and presence; `MessageService` holds it to the send
    /// rules): also what an event's reminders are sent with.
    /// - Throws: `HubError` 422 naming the field; `SendRefusal` for an `ack` or `urgency` it refuses.
    static func submission(_ fields: FieldReader, services: HubServices) throws -> MessageService.Submission {
        let title = try fields.string("title")
        let desc = try fields.string("desc")
        let text = try fields.string("message")
        let recipients = try Self.recipients(fields)
        // A message to persons and groups has no topic; one with both is refused by the send rules.
        let topicKey =
            recipients == nil
            ? try fields.string("topic_key") : try fields.optionalString("topic_key", maxLength: .max) ?? ""
        let data = try Self.data(fields)
        let distribution: Distribution = try fields.oneOf("distribution")
        let urgency = try Self.urgency(fields)
        let ack = try MessageService.Submission.ack(from: fields.document["ack"])
        let now = services.now()
        let ttl = try fields.optionalInteger("ttl", in: 0...Self.maximumTTLSeconds)
        let sendAt = try fields.optionalInteger("send_at", in: 0...(now + Self.maximumScheduleMS))
        let broadcast = try services.messages.broadcast(from: fields.document)
        var submission = MessageService.Submission(
            title: title, desc: desc, message: text, topicKey: topicKey, recipients: recipients, data: data,
            distribution: distribution, urgency: urgency, ttl: ttl, sendAt: sendAt, ack: ack, broadcast: broadcast)
        submission.override = try fields.optionalString("override", maxLength: MessageService.maximumOverrideReason)
        submission.overridePreferences = try fields.optionalBool("override_preferences") ?? false
        return submission
    }

    /// The body's `to`: `{"persons": [ids], "groups": [ids], "except": {"persons": [ids]}}`, each optional, arrays
    /// of strings; nil when absent.
    /// - Throws: `HubError` 422 `invalid_field` naming the field when it has another shape.
    static func recipients(_ fields: FieldReader) throws -> Recipients? {
        guard let value = fields.document["to"] else { return nil }
        guard let to = value.documentValue else {
            throw HubError.invalid(.invalidField, "the field \"to\" must be an object")
        }
        if let unknown = to.elements.map(\.key).first(where: { !["persons", "groups", "except"].contains($0) }) {
            throw HubError.invalid(
                .invalidField, "the field \"to\" has no field \"\(unknown)\" (persons, groups, except)")
        }
        func ids(_ key: String, of object: BSONDocument, named name: String) throws -> [String] {
            guard let list = object[key] else { return [] }
            let strings = list.arrayValue?.compactMap(\.stringValue)
            guard let strings, strings.count == list.arrayValue?.count else {
                throw HubError.invalid(.invalidField, "the field \"\(name)\" must be an array of strings")
            }
            return strings
        }
        var except: [String] = []
        if let value = to["except"] {
            guard let object = value.documentValue, object.elements.allSatisfy({ $0.key == "persons" }) else {
                throw HubError.invalid(.invalidField, "the field \"to.except\" must be {\"persons\": [ids]}")
            }
            except = try ids("persons", of: object, named: "to.except.persons")
        }
        return Recipients(
            persons: try ids("persons", of: to, named: "to.persons"),
            groups: try ids("groups", of: to, named: "to.groups"), exceptPersons: except)
    }

    /// The body's `urgency` (absent or null: `active`), read by the send rules (`Submission.urgency(named:)`).
    /// - Throws: `SendRefusal.invalidUrgency` (422 `invalid_urgency`) for any value but the four names.
    static func urgency(_ fields: FieldReader) throws -> Urgency {
        guard let value = fields.document["urgency"], !value.isNull else { return .default }
        return try MessageService.Submission.urgency(named: value.stringValue ?? "")
    }

    /// The body's `data`: an object of string values; empty when absent.
    /// - Throws: `HubError` 422 `invalid_field` when it has another shape.
    static func data(_ fields: FieldReader) throws -> [String: String] {
        guard let value = fields.document["data"] else { return [:] }
        guard let object = value.documentValue else {
            throw HubError.invalid(.invalidField, "the field \"data\" must be an object of strings")
        }
        var data: [String: String] = [:]
        for (key, value) in object {
            guard let string = value.stringValue else {
                throw HubError.invalid(.invalidField, "the field \"data\" must be an object of strings")
            }
            data[key] = string
        }
        return data
    }

    /// The request's `Idempotency-Key` (the IETF httpapi draft's header, a structured-field string: quoted; a bare
    /// token is taken too), or nil.
    /// - Throws: `HubError` 400 when it is given but not 1 to 255 visible ASCII characters.
    static func idempotencyKey(of request: Request) throws -> String? {
        guard let field = request.headers[.idempotencyKey] else { return nil }
        var key = Substring(field.trimmingCharacters(in: .whitespaces))
        if key.count >= 2, key.first == "\"", key.last == "\"" { key = key.dropFirst().dropLast() }
        guard MessageService.isValidIdempotencyKey(String(key)), !key.contains("\"") else {
            throw HubError.badRequest(.badRequest, "Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        return String(key)
    }

    /// GET /message/:msiKey: one archived message, as the caller may see it (`MessageVisibility`): all of it for its
    /// sender and admins, its public fields for others once it is sent, and 404 before.
    @Sendable func get(request: Request, context: HubRequestContext) async throws -> Response {
        let message = try await services.messages.message(
            msiKey: try context.parameters.objectID("msiKey"),
            for: context.messageViewer)
        return JSONResponse.make(.document(message.document))
    }

    /// GET /message?topic_key=...&since=...&limit=...&cursor=...: history, newest first, as the caller may see it.
    @Sendable func history(request: Request, context: HubRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let topicKeys = query.getAll("topic_key").flatMap { $0.split(separator: ",").map(String.init) }
        guard topicKeys.count <= 100, topicKeys.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 200 }) else {
            throw HubError.badRequest(.invalidQuery, "topic_key must name at most 100 topics")
        }
        let parameters = try PageParameters(query)
        let page = try await services.messages.page(
            MessageQuery(
                topicKeys: topicKeys, since: parameters.since, limit: parameters.limit, after: parameters.after),
            for: context.messageViewer)
        return PageParameters.response(page)
    }
}

extension HubRequestContext {
    /// Who the caller is to `MessageVisibility`: a user or token, else anonymous.
    var messageViewer: MessageViewer { identity.map { .caller($0) } ?? .anonymous }
}

extension HTTPField.Name {
    /// The IETF httpapi draft's request header that makes a POST safe to retry.
    static let idempotencyKey = Self("Idempotency-Key")!
}
