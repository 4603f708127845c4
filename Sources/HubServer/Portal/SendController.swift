import DAO
import HubCore
import HTTPTypes
import HubTime
import Hummingbird
import Logging
import Mongo

/// The send form and the confirmation of a message sent: the form stores and relays through `MessageService`,
/// the code behind POST /message. It sends to a subject, to a group the user may send to, or to persons (users the
/// recipient policy lets message persons directly), as its `to` radio buttons say.
struct SendController {
    let services: HubServices
    let pages: PortalPages
    /// The data payload FCM carries before the text is cut (`FCM_PAYLOAD_LIMIT`): the form counts down to it.
    var payloadLimit = PortalConfiguration.defaultPayloadLimit
    /// The school's wall clock, on which "send at" is read (`SCHOOL_TIME_ZONE`).
    var school = SchoolTime(zone: PortalConfiguration().schoolTimeZone)

    /// The routes on `users`, the group of logged-in users.
    func addRoutes(to users: RouterGroup<PortalRequestContext>) {
        users.get("/send", use: form)
        users.post("/send", use: send)
        users.get("/messages/:msiKey", use: confirmation)
        users.post("/messages/:msiKey/resend", use: resend)
    }

    /// What the form holds as filled in: the kind of recipient and the values of its fields.
    struct Filled {
        var kind = SendRecipients.Kind.subject
        var selection = SendTargets.Selection()
        /// The group chosen, the persons typed and the distribution chosen (group and persons), and the message's
        /// fields.
        var values: [String: String] = [:]
        /// Urgency, acknowledgement, translations, poster, kind, expiry, display and data.
        var options = SendOptions()
    }

    /// GET /portal/send[?channel=&area=&subject=][?to=group&group=]: the empty form, a subject or group chosen when
    /// given.
    @Sendable func form(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let targets = try await services.sendTargets(for: user.identity)
        let recipients = await SendRecipients.load(for: user.identity, services: services)
        let query = request.uri.queryParameters
        var filled = Filled(selection: SendTargets.Selection(query: query))
        filled.kind = query.get("to").flatMap(SendRecipients.Kind.init(rawValue:)) ?? .subject
        filled.values["group"] = query.get("group") ?? ""
        if filled.selection.subject.isEmpty, targets.targets.count == 1, let only = targets.targets.first {
            filled.selection = .init(channel: only.channel.id.hex, area: only.area.id.hex, subject: only.subject.id.hex)
        }
        if filled.values["group"] == "", recipients.groups.count == 1 {
            filled.values["group"] = recipients.groups[0].group.id
        }
        return render(
            context: context, targets: targets, recipients: recipients, filled: filled,
            audience: try await audience(), errors: [:])
    }

    /// POST /portal/send: sends, then shows the confirmation; or the form again, as filled, with the errors.
    /// The form's idempotency key (made when it was rendered) makes a second submit of it send nothing new.
    /// Only the fields of the kind of recipient chosen (`to`, a subject when absent) are read.
    @Sendable func send(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let targets = try await services.sendTargets(for: user.identity)
        let form = context.form
        var filled = Filled()
        filled.kind = SendRecipients.Kind(rawValue: form.trimmed("to")) ?? .subject
        for field in ["title", "desc", "message"] { filled.values[field] = form.trimmed(field) }
        var errors: [String: String] = [:]
        var submission: MessageService.Submission
        switch filled.kind {
        case .subject:
            filled.selection = SendTargets.Selection(
                channel: form.trimmed("channel"), area: form.trimmed("area"),
                subject: form.trimmed("subject"))
            let target = targets.target(filled.selection)
            // Only an Alert has a notification text: an Information subject's form sends none.
            let isAlert = target?.subject.distribution == .alert
            submission = MessageService.Submission(
                title: filled.values["title"] ?? "", desc: isAlert ? filled.values["desc"] ?? "" : "",
                message: filled.values["message"] ?? "", topicKey: target?.subject.topicKey ?? "",
                distribution: target?.subject.distribution ?? .information)
            if target == nil { errors["subject"] = "Choose a channel, an area and a subject." }
        case .group, .persons:
            let distribution = Distribution(rawValue: form.trimmed("distribution"))
            filled.values["distribution"] = distribution?.rawValue ?? ""
            let recipients: Recipients
            if filled.kind == .group {
                filled.values["group"] = form.trimmed("group")
                recipients = Recipients(groups: [filled.values["group"] ?? ""])
            } else {
                filled.values["persons"] = form.trimmed("persons")
                recipients = Recipients(persons: SendRecipients.personIDs(filled.values["persons"] ?? ""))
            }
            submission = MessageService.Submission(
                title: filled.values["title"] ?? "", desc: distribution == .alert ? filled.values["desc"] ?? "" : "",
                message: filled.values["message"] ?? "", topicKey: "", recipients: recipients,
                distribution: distribution ?? .information)
            if distribution == nil { errors["distribution"] = "Choose Alert or Information." }
        }
        // The fields beyond recipients and texts, read as POST /message reads them; each refusal beside its field.
        filled.options = SendOptions(form: form)
        let reading = filled.options.read(with: services.messages, alert: submission.distribution == .alert)
        submission.urgency = reading.urgency
        submission.ack = reading.ack
        submission.broadcast = reading.broadcast
        submission.data = reading.data
        errors.merge(reading.errors) { first, _ in first }
        switch filled.options.sendAt(in: school, now: services.now()) {
        case .success(let sendAt): submission.sendAt = sendAt
        case .failure(let problem): errors["send_at"] = problem.text
        }
        // Where the form shows a refusal of the recipients depends on what it offers; devices are counted only
        // for a form shown again.
        let recipients = await SendRecipients.load(for: user.identity, services: services, countingDevices: false)
        // What the form asks for (the API takes an empty title or message, as the legacy hub did), then the send
        // rules, each beside its field.
        if submission.title.isEmpty { errors["title"] = "Enter a title." }
        if submission.message.isEmpty { errors["message"] = "Enter the message." }
        for refusal in submission.refusals {
            let error = Self.formError(refusal, submission, filled.kind, recipients)
            if errors[error.field] == nil { errors[error.field] = error.text }
        }
        guard errors.isEmpty else {
            return render(
                context: context, targets: targets,
                recipients: await SendRecipients.load(for: user.identity, services: services), filled: filled,
                audience: try await audience(), errors: errors, status: .unprocessableContent)
        }
        do {
            let message = try await services.messages.send(
                submission, as: user.identity, idempotencyKey: Self.idempotencyKey(form.trimmed("idempotency_key")))
            return .redirect(to: "/portal/messages/\(message.msiKey.hex)")
        } catch let refusal as SendRefusal {
            // The subject or group changed, or its access list did, since the form was shown; or persons were
            // posted by someone the recipient policy does not let message them.
            let error = Self.formError(refusal, submission, filled.kind, recipients)
            errors[error.field] = error.text
            return render(
                context: context, targets: targets,
                recipients: await SendRecipients.load(for: user.identity, services: services), filled: filled,
                audience: try await audience(), errors: errors, status: .unprocessableContent)
        }
    }

    /// The form's field a refusal is shown beside, and what it says there: the send rules of the fields in the
    /// form's words, the recipients' rules beside the group or persons field (beside the choice of recipient when
    /// that field is not on the form), the subject's rules (it changed, or its access list did) as the service says
    /// them.
    private static func formError(
        _ refusal: SendRefusal, _ submission: MessageService.Submission,
        _ kind: SendRecipients.Kind, _ recipients: SendRecipients
    )
        -> (field: String, text: String)
    {
        switch (refusal.code, refusal.field) {
        case (.fieldTooLong, let field?) where field != .topicKey:
            let length = submission[field].count
            return (field.rawValue, "This is \(length) characters long; at most \(field.maxLength) fit on the phones.")
        case (.alertNeedsDesc, _):
            return ("desc", "Enter the notification text.")
        case (.emptyField, .topicKey?):
            return ("subject", "Choose a channel, an area and a subject.")
        case (.invalidRecipients, _), (.groupNotFound, _), (.recipientAccessDenied, _):
            return recipientsError(refusal, submission.recipients ?? Recipients(), kind, recipients)
        case (.invalidData, _): return ("data", refusal.message)
        case (.invalidUrgency, _): return ("urgency", refusal.message)
        case (.invalidAck, _): return ("ack", refusal.message)
        case (.invalidTranslations, _): return ("translations", refusal.message)
        case (.invalidImage, _): return ("image", refusal.message)
        case (.invalidKind, _): return ("kind", refusal.message)
        case (.invalidExpiry, _): return ("expires_at", refusal.message)
        case (.invalidDisplay, _): return ("display", refusal.message)
        default:
            return ("subject", refusal.message)
        }
    }

    /// A refusal of the recipients in the form's words, beside the group or persons field when the form shows it.
    private static func recipientsError(
        _ refusal: SendRefusal, _ to: Recipients, _ kind: SendRecipients.Kind,
        _ recipients: SendRecipients
    ) -> (field: String, text: String) {
        let shown = kind == .group ? !recipients.groups.isEmpty : kind == .persons && recipients.mayMessagePersons
        let field = shown ? kind.rawValue : "recipients"
        switch (refusal.code, kind) {
        case (.recipientAccessDenied, .group):
            return (field, "You may not send to this group: an administrator can add you to its access.")
        case (.recipientAccessDenied, _):
            return (field, "You may not send to persons directly: an administrator can give you the right.")
        case (.groupNotFound, _):
            return (field, "This group no longer exists. Choose another.")
        case (.invalidRecipients, .group):
            return (field, "Choose a group.")
        case (.invalidRecipients, .persons):
            if to.persons.isEmpty { return (field, "Enter at least one person id.") }
            let maximum = MessageService.Submission.maximumPersons
            if to.persons.count > maximum {
                return (field, "This names \(to.persons.count) persons; at most \(maximum) fit in one message.")
            }
            if let bad = to.persons.first(where: { GroupService.personIDProblem($0) != nil }) {
                return (
                    field,
                    "“\(bad.prefix(40))” is not a person id: a person id is 1 to "
                        + "\(GroupService.maximumPersonLength) printable characters."
                )
            }
            return (field, refusal.message)
        default:
            return (field, refusal.message)
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
        var data: [String: Any]
        if let to = message.recipients {
            data = MessageRow.make(
                message, location: nil,
                groupNames: await SendRecipients.groupNames(of: [message], services: services))
            if to.persons.isEmpty, to.groups.count == 1 {
                data["again"] = "/portal/send?to=group&group=\(to.groups[0])"
                data["againText"] = "Send another message to this group"
            } else if to.groups.isEmpty {
                data["again"] = "/portal/send?to=persons"
                data["againText"] = "Send another message to persons"
            }
        } else {
            let location = try? await services.cube.location(topicKey: message.topicKey)
            data = MessageRow.make(message, location: location)
            if let location {
                data["again"] =
                    "/portal/send?channel=\(location.channel.id.hex)&area=\(location.area.id.hex)"
                    + "&subject=\(location.subject.id.hex)"
                data["againText"] = "Send another message to this subject"
            }
        }
        // Its reach, kept up to date on the page by reach.js.
        data["reach"] = await ReachController(services: services).pageData(msiKey: msiKey, user: user)
        data["presentation"] = SentMessageFacts.presentation(message, school: school)
        data["acknowledgement"] = SentMessageFacts.acknowledgement(message, now: services.now())
        data["edit"] = PortalEditController.pageData(message)
        var notice = Self.doneNotices[request.uri.queryParameters.get("done") ?? ""]
        if let approval = ApprovalState.of(message, now: services.now()), approval != .approved {
            // Held for a second person: the page says so instead of "sent".
            data["held"] = true
            data["approvalState"] =
                [
                    ApprovalState.awaitingApproval: "waiting", .rejected: "rejected: never sent",
                    .expired: "expired unapproved: never sent",
                ][approval] ?? approval.rawValue
            if approval == .awaitingApproval {
                notice = "This message waits for a second person's approval: nothing is sent until then."
            }
        }
        return pages.render("sent-one", context.page("Message sent", ["message": data], notice: notice))
    }

    /// What the message's page says after a form on it did its work (`?done=`).
    static let doneNotices = [
        "resend": "The message goes again, within moments, to the devices that have not answered.",
        "corrected": "The correction is stored; the phones that have the message get the corrected texts.",
        "correction_held": "The correction waits for a second person's approval; until then the phones keep the "
            + "approved texts.",
        "withdrawn": "The message is withdrawn: the phones that have it remove it, and nobody gets it any more.",
    ]

    /// The form's key, if it is one a form could carry (else the message is sent without one).
    private static func idempotencyKey(_ value: String) -> String? {
        MessageService.isValidIdempotencyKey(value) ? value : nil
    }

    /// Devices per topic for the form's "reaches N devices"; empty (not an error page) when it cannot be read.
    private func audience() async throws -> [String: Int] {
        (try? await services.devices.audienceSizes()) ?? [:]
    }

    private func render(
        context: PortalRequestContext, targets: SendTargets, recipients: SendRecipients,
        filled: Filled, audience: [String: Int], errors: [String: String],
        status: HTTPResponse.Status = .ok
    ) -> Response {
        var data = targets.selectData(filled.selection, audience: audience)
        var values = filled.values
        if values["distribution", default: ""].isEmpty { values["distribution"] = Distribution.alert.rawValue }
        data["values"] = values
        data["options"] = filled.options.templateData()
        data["payloadLimit"] = payloadLimit
        data["schoolZone"] = school.name
        data["errors"] = errors
        data["hasErrors"] = !errors.isEmpty
        data["hasTargets"] = !targets.targets.isEmpty || !recipients.groups.isEmpty || recipients.mayMessagePersons
        data["hasSubjects"] = !targets.targets.isEmpty
        // The choice of recipient only for users who have more than subjects to choose from.
        let kinds = !recipients.groups.isEmpty || recipients.mayMessagePersons
        data["showKinds"] = kinds
        data["groups"] = recipients.selectData(selected: values["group"] ?? "")
        data["hasGroups"] = !recipients.groups.isEmpty
        data["mayMessagePersons"] = recipients.mayMessagePersons
        data["maximumPersons"] = MessageService.Submission.maximumPersons
        // The kind chosen when the form offers it, else the first it offers.
        var offered: [SendRecipients.Kind] = targets.targets.isEmpty ? [] : [.subject]
        if !recipients.groups.isEmpty { offered.append(.group) }
        if recipients.mayMessagePersons { offered.append(.persons) }
        let kind = offered.contains(filled.kind) ? filled.kind : offered.first ?? .subject
        data["kind"] = ["subject": kind == .subject, "group": kind == .group, "persons": kind == .persons]
        data["alert"] = values["distribution"] == Distribution.alert.rawValue
        // Without the script the notification text shows unless the choice made says an Information.
        let chosenAlert = targets.target(filled.selection)?.subject.distribution.map { $0 == .alert }
        data["descHidden"] =
            kind == .subject
            ? chosenAlert == false
            : values["distribution"] == Distribution.information.rawValue
        data["limits"] = [
            "title": MessageField.title.maxLength, "desc": MessageField.desc.maxLength,
            "message": MessageField.message.maxLength,
        ]
        // A new key per rendering: the form shown again after an error is a new request.
        data["idempotencyKey"] = Secret.make()
        return pages.render("send", context.page("Send a message", data), status: status)
    }
}

/// A message as the sent list and the confirmation show it.
enum MessageRow {
    /// The row of `message`: where it went is its subject's path (`location`), or for a message to persons and
    /// groups "To group Class 7B" / "To 3 persons" (`groupNames`: the names of its groups).
    static func make(_ message: Message, location: SubjectLocation?, groupNames: [String: String] = [:])
        -> [String: Any]
    {
        var row: [String: Any] = [
            "msiKey": message.msiKey.hex, "title": message.title, "desc": message.desc, "message": message.message,
            "distribution": message.distribution, "isAlert": message.distribution == Distribution.alert.rawValue,
            "sender": message.sender, "time": PortalTime.text(milliseconds: message.timestamp),
            "subjectPath": location.map { "\($0.channel.name) › \($0.area.name) › \($0.subject.name)" }
                ?? "(deleted subject)",
        ]
        if let recipients = message.recipients {
            row["subjectPath"] = SendRecipients.text(recipients, groupNames: groupNames)
            row["addressed"] = true
        }
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
        case .awaitingApproval: return "Awaiting a second person's approval"
        case .rejected: return "Rejected: never sent"
        case .withdrawn: return "Withdrawn before it was sent: never sent"
        }
    }
}
