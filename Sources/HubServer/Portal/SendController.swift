import DAO
import HubCore
import HTTPTypes
import HubTime
import Hummingbird
import Logging
import Mongo

/// The send form and the confirmation of a message sent: the form stores and relays through `MessageService`,
/// the code behind POST /message.
struct SendController {
    let services: HubServices
    let pages: PortalPages

    /// The routes on `users`, the group of logged-in users.
    func addRoutes(to users: RouterGroup<PortalRequestContext>) {
        users.get("/send", use: form)
        users.post("/send", use: send)
        users.get("/messages/:msiKey", use: confirmation)
    }

    /// GET /portal/send[?channel=&area=&subject=]: the empty form, a subject chosen when given.
    @Sendable func form(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let targets = try await services.sendTargets(for: user.identity)
        let query = request.uri.queryParameters
        var selection = SendTargets.Selection(query: query)
        if selection.subject.isEmpty, targets.targets.count == 1, let only = targets.targets.first {
            selection = .init(channel: only.channel.id.hex, area: only.area.id.hex, subject: only.subject.id.hex)
        }
        return render(context: context, targets: targets, selection: selection, audience: try await audience(), values: [:], errors: [:])
    }

    /// POST /portal/send: sends, then shows the confirmation; or the form again, as filled, with the errors.
    /// The form's idempotency key (made when it was rendered) makes a second submit of it send nothing new.
    @Sendable func send(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let targets = try await services.sendTargets(for: user.identity)
        let form = context.form
        let selection = SendTargets.Selection(channel: form.trimmed("channel"), area: form.trimmed("area"),
                                              subject: form.trimmed("subject"))
        let values = ["title": form.trimmed("title"), "desc": form.trimmed("desc"), "message": form.trimmed("message")]
        let target = targets.target(selection)
        // Only an Alert has a notification text: an Information subject's form sends none.
        let isAlert = target?.subject.distribution == .alert
        let submission = MessageService.Submission(
            title: values["title"] ?? "", desc: isAlert ? values["desc"] ?? "" : "", message: values["message"] ?? "",
            topicKey: target?.subject.topicKey ?? "", distribution: target?.subject.distribution ?? .information)
        // What the form asks for (the API takes an empty title or message, as the legacy hub did), then the send
        // rules, each beside its field.
        var errors: [String: String] = [:]
        if target == nil { errors["subject"] = "Choose a channel, an area and a subject." }
        if submission.title.isEmpty { errors["title"] = "Enter a title." }
        if submission.message.isEmpty { errors["message"] = "Enter the message." }
        for refusal in submission.refusals {
            let error = Self.formError(refusal, submission)
            if errors[error.field] == nil { errors[error.field] = error.text }
        }
        guard errors.isEmpty, target != nil else {
            return render(context: context, targets: targets, selection: selection, audience: try await audience(), values: values, errors: errors,
                          status: .unprocessableContent)
        }
        do {
            let message = try await services.messages.send(
                submission, as: user.identity, idempotencyKey: Self.idempotencyKey(form.trimmed("idempotency_key")))
            return .redirect(to: "/portal/messages/\(message.msiKey.hex)")
        } catch let refusal as SendRefusal {
            // The subject changed or its access list did since the form was shown.
            let error = Self.formError(refusal, submission)
            errors[error.field] = error.text
            return render(context: context, targets: targets, selection: selection, audience: try await audience(), values: values, errors: errors,
                          status: .unprocessableContent)
        }
    }

    /// The form's field a refusal is shown beside, and what it says there: the send rules of the fields in the
    /// form's words, the subject's rules (it changed, or its access list did) as the service says them.
    private static func formError(_ refusal: SendRefusal, _ submission: MessageService.Submission)
        -> (field: String, text: String) {
        switch (refusal.code, refusal.field) {
        case (.fieldTooLong, let field?) where field != .topicKey:
            let length = submission[field].count
            return (field.rawValue, "This is \(length) characters long; at most \(field.maxLength) fit on the phones.")
        case (.alertNeedsDesc, _):
            return ("desc", "Enter the notification text.")
        case (.emptyField, .topicKey?):
            return ("subject", "Choose a channel, an area and a subject.")
        default:
            return ("subject", refusal.message)
        }
    }

    /// GET /portal/messages/:msiKey: a message the user sent (an admin: any message), with its relay state.
    @Sendable func confirmation(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        guard let msiKey = context.parameters.get("msiKey").flatMap(ObjectID.init(hex:)) else {
            throw PortalError.notFound("This message")
        }
        let message: Message
        do {
            message = try await services.messages.detailedMessage(msiKey: msiKey, for: user.identity)
        } catch let error as DAOError where error.code == .messageNotFound {
            throw PortalError.notFound("This message")
        }
        let location = try? await services.cube.location(topicKey: message.topicKey)
        var data = MessageRow.make(message, location: location)
        if let location {
            data["again"] = "/portal/send?channel=\(location.channel.id.hex)&area=\(location.area.id.hex)"
                + "&subject=\(location.subject.id.hex)"
        }
        return pages.render("sent-one", context.page("Message sent", ["message": data]))
    }

    /// The form's key, if it is one a form could carry (else the message is sent without one).
    private static func idempotencyKey(_ value: String) -> String? {
        MessageService.isValidIdempotencyKey(value) ? value : nil
    }

    /// Devices per topic for the form's "reaches N devices"; empty (not an error page) when it cannot be read.
    private func audience() async throws -> [String: Int] {
        (try? await services.devices.audienceSizes()) ?? [:]
    }

    private func render(context: PortalRequestContext, targets: SendTargets, selection: SendTargets.Selection,
                        audience: [String: Int], values: [String: String], errors: [String: String],
                        status: HTTPResponse.Status = .ok) -> Response {
        var data = targets.selectData(selection, audience: audience)
        data["values"] = values
        data["errors"] = errors
        data["hasErrors"] = !errors.isEmpty
        data["hasTargets"] = !targets.targets.isEmpty
        data["limits"] = ["title": MessageField.title.maxLength, "desc": MessageField.desc.maxLength,
                          "message": MessageField.message.maxLength]
        // A new key per rendering: the form shown again after an error is a new request.
        data["idempotencyKey"] = Secret.make()
        return pages.render("send", context.page("Send a message", data), status: status)
    }
}

/// A message as the sent list and the confirmation show it.
enum MessageRow {
    static func make(_ message: Message, location: SubjectLocation?) -> [String: Any] {
        var row: [String: Any] = [
            "msiKey": message.msiKey.hex, "title": message.title, "desc": message.desc, "message": message.message,
            "distribution": message.distribution, "isAlert": message.distribution == Distribution.alert.rawValue,
            "sender": message.sender, "time": PortalTime.text(milliseconds: message.timestamp),
            "subjectPath": location.map { "\($0.channel.name) › \($0.area.name) › \($0.subject.name)" }
                ?? "(deleted subject)",
        ]
        let relay = RelayState(message: message.document)
        row["relay"] = relayText(relay)
        row["relayClass"] = relay?.status.rawValue ?? "none"
        return row
    }

    /// Where the message stands in the relay to phones, for people.
    static func relayText(_ relay: RelayState?) -> String {
        guard let relay else { return "Sent by the old hub" }
        switch relay.status {
        case .pending:
            if relay.dueAt > UnixTime.nowMilliseconds() + 5_000 {
                return "Scheduled for \(PortalTime.text(milliseconds: relay.dueAt))"
            }
            return relay.attempts > 0 ? "Being retried" : "Waiting to be sent"
        case .direct: return "Being sent"
        case .sent: return "Sent to the push service"
        case .failed:
            let reason = relay.components.values.compactMap(\.lastError).first.map { ": \($0)" } ?? ""
            return "Failed\(reason)"
        case .expired: return "Expired before it could be sent"
        case .imported: return "Imported from the old hub"
        }
    }
}
