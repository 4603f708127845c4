import DAO
import Foundation
import HubCore
import HubModel
import Hummingbird
import Mongo

/// What the message page shows beyond the texts and the relay: how phones present it (urgency, languages, poster,
/// kind, expiry, display, data, a cohort) and, for a message that asked for an acknowledgement, where its
/// escalation stands and whether its sender may send it again to those who have not answered.
enum SentMessageFacts {
    /// The presentation facts of `message`, each `{id, name, value}` (or `items` for a list), only those it has
    /// beyond the defaults (urgency always): the time it was scheduled for on the school's wall clock first.
    static func presentation(_ message: Message, school: SchoolTime) -> [[String: Any]] {
        let broadcast = message.broadcast
        var facts: [[String: Any]] = []
        if let sendAt = RelayState(message: message.document)?.sendAt {
            facts.append(["id": "sent-send-at", "name": "Scheduled for", "value": school.text(sendAt)])
        }
        facts.append(["id": "sent-urgency", "name": "Urgency", "value": message.urgency.rawValue])
        if broadcast.language != nil || !broadcast.translations.isEmpty {
            let main = broadcast.language.map { "\($0) (the texts above)" } ?? "the hub's default (the texts above)"
            facts.append([
                "id": "sent-languages", "name": "Languages",
                "value": ([main] + broadcast.translations.map(\.language)).joined(separator: ", "),
            ])
            for (language, text) in broadcast.translations {
                facts.append([
                    "id": "sent-translation-\(language)", "name": "Title in \(language)",
                    "value": text.title,
                ])
            }
        }
        if let image = broadcast.image { facts.append(["id": "sent-image", "name": "Poster", "value": image]) }
        if let kind = broadcast.kind {
            let banner = broadcast.isBanner ? " (a banner the app shows at launch while it lasts)" : ""
            facts.append(["id": "sent-kind", "name": "Kind", "value": kind + banner])
        }
        if !broadcast.dismissible {
            facts.append([
                "id": "sent-dismissible", "name": "Dismissible",
                "value": "No: the app keeps it until it expires",
            ])
        }
        if let expiresAt = broadcast.expiresAt {
            facts.append(["id": "sent-expires", "name": "Expires", "value": PortalTime.text(milliseconds: expiresAt)])
        }
        if !broadcast.display {
            facts.append(["id": "sent-display", "name": "Shown", "value": "No: a background data message for the app"])
        }
        if !message.data.isEmpty {
            facts.append([
                "id": "sent-data", "name": "Data for the app",
                "value": message.data.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }
                    .joined(separator: "; "),
            ])
        }
        if let sample = broadcast.sample {
            let percent = (sample * 1000).rounded() / 10
            let shown = percent == percent.rounded() ? String(Int(percent)) : String(percent)
            facts.append([
                "id": "sent-cohort", "name": "Cohort",
                "value": "\(shown) % of the topic's registered devices, picked by the cohort "
                    + "“\(broadcast.cohort ?? MessageService.Submission.defaultCohort)”",
            ])
        }
        return facts
    }

    /// The acknowledgement asked of `message`'s recipients and where its escalation stands at `now`, with the
    /// re-send form's action when a round may be brought forward; nil when it asked for none.
    static func acknowledgement(_ message: Message, now: Int64) -> [String: Any]? {
        guard let progress = AckProgress(message: message) else { return nil }
        let request = progress.request
        let minutes =
            request.withinSeconds % 60 == 0
            ? "\(request.withinSeconds / 60) minutes"
            : "\(request.withinSeconds) seconds"
        var asked = "Within \(minutes)"
        asked += request.resend == 1 ? ", sent again once" : ", sent again up to \(request.resend) times"
        asked += " to those who have not answered"
        var data: [String: Any] = [
            "asked": asked, "responses": request.responses.joined(separator: " | "),
            "hasResponses": !request.responses.isEmpty,
        ]
        let step = AckResendService.step(of: message, now: now)
        switch step {
        case .notAsked: return nil
        case .notSent: data["state"] = "Not sent yet."
        case .waiting(let made, let resend, let nextAt):
            data["state"] = "\(made) of \(resend) re-sends made; the next at \(PortalTime.text(milliseconds: nextAt))."
        case .underWay: data["state"] = "A round of re-sends is under way."
        case .allResent(let resend, let at):
            let made = resend == 0 ? "No re-sends were asked for" : "All \(resend) re-sends were made"
            data["state"] = "\(made); those who have not answered are reported at \(PortalTime.text(milliseconds: at))."
        case .finished(let unacknowledged):
            data["state"] =
                unacknowledged == 1
                ? "Ended: 1 device never answered."
                : "Ended: \(unacknowledged) devices never answered."
        }
        if step.mayResend { data["resend"] = "/portal/messages/\(message.msiKey.hex)/resend" }
        return data
    }
}

extension SendController {
    /// POST /portal/messages/:msiKey/resend: brings the next round of re-sends to the devices that have not
    /// answered forward to now (`AckResendService`, its sender or an admin), then shows the message again; 409 when
    /// the escalation is not waiting for a round (ended, every re-send made, one under way, not sent yet).
    @Sendable func resend(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        guard let msiKey = context.parameters.get("msiKey").flatMap(ObjectID.init(hex:)) else {
            throw PortalError.notFound("This message")
        }
        do {
            _ = try await services.ackResends.resendNow(msiKey: msiKey, for: user.identity)
        } catch let error as DAOError where error.code == .messageNotFound {
            throw PortalError.notFound("This message")
        } catch let refusal as AckResendRefusal {
            let sentence = refusal.message.prefix(1).uppercased() + refusal.message.dropFirst() + "."
            throw PortalError(status: .conflict, title: "Not sent again", message: sentence)
        }
        return .redirect(to: "/portal/messages/\(msiKey.hex)?done=resend")
    }
}
