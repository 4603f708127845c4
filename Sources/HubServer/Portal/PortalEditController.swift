import DAO
import HubCore
import Hummingbird
import Mongo

/// Correcting and withdrawing a message from its page, by its sender or an admin: the portal's side of PUT and
/// DELETE /message/:msiKey (`MessageEditController`), through the same `MessageService` calls (the phones that have it are told through its
/// relay; one not sent yet goes out corrected, or never).
struct PortalEditController {
    let services: HubServices

    /// The routes on `users`, the group of logged-in users.
    func addRoutes(to users: RouterGroup<PortalRequestContext>) {
        users.post("/messages/:msiKey/correct", use: correct)
        users.post("/messages/:msiKey/withdraw", use: withdraw)
    }

    /// The form data of the message's page: where to post a correction and a withdrawal, and the texts to start
    /// from; nil when it may not be edited (withdrawn, or held for approval: the approver sees it as it is).
    static func pageData(_ message: Message) -> [String: Any]? {
        guard message.document["withdrawn"] == nil,
            RelayState(message: message.document)?.status != .awaitingApproval
        else { return nil }
        let base = "/portal/messages/\(message.msiKey.hex)"
        return [
            "correct": base + "/correct", "withdraw": base + "/withdraw", "title": message.title,
            "desc": message.desc, "text": message.message,
            "isAlert": message.distribution == Distribution.alert.rawValue,
            "limits": [
                "title": MessageField.title.maxLength, "desc": MessageField.desc.maxLength,
                "message": MessageField.message.maxLength,
            ],
        ]
    }

    /// POST /portal/messages/:msiKey/correct (`title`, `desc`, `message`): stores the texts that changed and tells
    /// the phones, then shows the message again; 409 when it cannot be corrected now, 422 for texts the send rules
    /// refuse (nothing is stored).
    @Sendable func correct(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let msiKey = try Self.msiKey(context)
        let form = context.form
        let current = try await message(msiKey, for: user)
        // A field the form did not carry (an Information's notification text) stays as it is.
        func changed(_ field: String, _ stored: String) -> String? {
            guard !form.all(field).isEmpty else { return nil }
            let value = form.trimmed(field)
            return value == stored ? nil : value
        }
        let correction = MessageCorrection(
            title: changed("title", current.title), desc: changed("desc", current.desc),
            message: changed("message", current.message))
        guard correction.title != nil || correction.desc != nil || correction.message != nil else {
            throw PortalError(
                status: .unprocessableContent, title: "Nothing to correct",
                message: "The texts are as they were: change one, then send the correction.")
        }
        var held = false
        try await Self.edit(failing: "Not corrected") {
            held = try await services.messages.correct(msiKey: msiKey, with: correction, as: user.identity)
                .awaitsApproval
        }
        return .redirect(to: "/portal/messages/\(msiKey.hex)?done=\(held ? "correction_held" : "corrected")")
    }

    /// POST /portal/messages/:msiKey/withdraw (`reason`, optional): withdraws the message from the phones that have
    /// it (one not sent yet is never sent), then shows it again; 404 for another sender's message (as its page), 409
    /// when it cannot be withdrawn now.
    @Sendable func withdraw(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let msiKey = try Self.msiKey(context)
        _ = try await message(msiKey, for: user)
        let reason = context.form.trimmed("reason")
        guard reason.utf8.count <= MessageEditController.maximumReason else {
            throw PortalError(
                status: .unprocessableContent, title: "Not withdrawn",
                message: "A reason has at most \(MessageEditController.maximumReason) bytes.")
        }
        try await Self.edit(failing: "Not withdrawn") {
            _ = try await services.messages.withdraw(
                msiKey: msiKey, reason: reason.isEmpty ? nil : reason,
                as: user.identity)
        }
        return .redirect(to: "/portal/messages/\(msiKey.hex)?done=withdrawn")
    }

    /// Runs an edit of a message (`body`), its refusals answered as pages titled `failing`: another sender's message,
    /// or one gone, as not found (as its page); one that cannot be changed now 409; texts the send rules refuse 422.
    private static func edit(failing: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as DAOError where error.code == .messageNotFound {
            throw PortalError.notFound("This message")
        } catch let refusal as EditRefusal where refusal.code == .notYours {
            throw PortalError.notFound("This message")
        } catch let refusal as EditRefusal {
            throw PortalError(status: .conflict, title: failing, message: sentence(refusal.message))
        } catch let refusal as SendRefusal {
            throw PortalError(status: .unprocessableContent, title: failing, message: sentence(refusal.message))
        }
    }

    /// The message as `user` may see its detail (its sender, an admin), else a page saying it does not exist.
    private func message(_ msiKey: ObjectID, for user: PortalUser) async throws -> Message {
        do {
            return try await services.messages.detailedMessage(msiKey: msiKey, for: user.identity)
        } catch let error as DAOError where error.code == .messageNotFound {
            throw PortalError.notFound("This message")
        }
    }

    private static func msiKey(_ context: PortalRequestContext) throws -> ObjectID {
        guard let key = context.parameters.get("msiKey").flatMap(ObjectID.init(hex:)) else {
            throw PortalError.notFound("This message")
        }
        return key
    }

    /// A refusal's clause as a sentence.
    private static func sentence(_ text: String) -> String {
        text.prefix(1).uppercased() + text.dropFirst() + (text.hasSuffix(".") ? "" : ".")
    }
}
