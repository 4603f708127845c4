import DAO
import HubCore
import Hummingbird
import Logging
import Mongo
import NIOHTTP1

extension HubError {
    /// The one mapping of any failure below HTTP to the answer a client gets; the REST error middleware and the
    /// portal's page middleware both call it.
    ///
    /// A cancelled request or a closing pool is 503 (the hub is stopping; try again). A raw `MongoError` here is
    /// a missed mapping in the layers below: a bug, so it stops a debug build and is a 500 in release.
    static func mapping(_ error: any Error, logger: Logger) -> HubError {
        switch error {
        case let error as HubError:
            return error
        case let error as DAOError:
            if error.code == .unavailable || error.code == .database || error.code == .outcomeUnknown {
                logger.warning("database error", metadata: ["error": "\(error)"])
            }
            return HubError(error)
        case let error as SendRefusal:
            return HubError(error)
        case let error as ApprovalRefusal:
            return HubError(error)
        case let error as AccountRefusal:
            return HubError(error)
        case let error as LoginRefusal:
            return HubError(error)
        case let error as DeviceRefusal:
            return HubError(error)
        case let error as AssertionRefusal:
            // Every refusal of an assertion, its absence of configuration too, is 401 with the reason.
            return HubError(
                .unauthorized, error.code == .replayed ? .assertionReplayed : .invalidAssertion, error.message)
        case let error as GroupRefusal:
            return HubError(error)
        case let error as PersonSettingsRefusal:
            return error.code == .notBound
                ? HubError(.conflict, .notBound, error.message)
                : HubError(.unprocessableContent, .invalidSettings, error.message)
        case let error as RoomRefusal:
            return HubError(error)
        case let error as EventRefusal:
            return HubError(error)
        case let error as WebhookRefusal:
            return error.code == .webhookNotFound
                ? HubError(.notFound, .webhookNotFound, error.message)
                : HubError(.unprocessableContent, .invalidWebhook, error.message)
        case let error as HTTPParserError:
            // The HTTP/1 decoder's verdict on what the client sent: never the hub's fault.
            return error == .invalidEOFState ? .incompleteBody : HubError(.badRequest, .badRequest, "\(error)")
        case is CancellationError:
            return .databaseUnavailable
        case let error as MongoError:
            logger.error("a database error reached HTTP unmapped", metadata: ["error": "\(error)"])
            assertionFailure("unmapped MongoError: \(error)")
            return error.isUnavailable ? .databaseUnavailable : .internalError
        case let error as any HTTPResponseError:
            return HubError(error.status, code(for: error.status), message(for: error.status))
        default:
            logger.error("unhandled error", metadata: ["error": "\(String(reflecting: error))"])
            return .internalError
        }
    }

    /// The answer a refused approval, rejection or override becomes.
    init(_ refusal: ApprovalRefusal) {
        switch refusal.code {
        case .selfApproval: self.init(.forbidden, .approvalSelf, refusal.message)
        case .needsUser: self.init(.forbidden, .approvalNeedsUser, refusal.message)
        case .accessDenied: self.init(.forbidden, .approvalAccessDenied, refusal.message)
        case .notPending: self.init(.conflict, .approvalNotPending, refusal.message)
        case .expired: self.init(.conflict, .approvalExpired, refusal.message)
        case .overrideForbidden: self.init(.forbidden, .overrideForbidden, refusal.message)
        case .reasonRequired: self.init(.unprocessableContent, .reasonRequired, refusal.message)
        case .stale: self.init(.conflict, .approvalStale, refusal.message)
        case .versionRequired: self.init(.unprocessableContent, .versionRequired, refusal.message)
        case .settingsForbidden: self.init(.forbidden, .forbidden, refusal.message)
        case .settingsInvalid: self.init(.unprocessableContent, .settingsInvalid, refusal.message)
        }
    }

    /// The answer a refused account change becomes.
    init(_ refusal: AccountRefusal) {
        switch refusal.code {
        case .userNotFound: self.init(.notFound, .userNotFound, refusal.message)
        case .tokenNotFound: self.init(.notFound, .tokenNotFound, refusal.message)
        case .nameTaken: self.init(.conflict, .conflict, refusal.message)
        case .selfLockout: self.init(.conflict, .conflict, refusal.message)
        default: self.init(.unprocessableContent, .invalidField, refusal.message)
        }
    }

    /// The answer a refused password login (HTTP Basic) becomes: 401, 429 or 503, with `Retry-After` when known.
    init(_ refusal: LoginRefusal) {
        var headers: HTTPFields = [:]
        if let seconds = refusal.retryAfterSeconds { headers[.retryAfter] = String(seconds) }
        switch refusal.code {
        case .throttled: self.init(.tooManyRequests, .tooManyRequests, refusal.message, headers: headers)
        case .busy: self.init(.serviceUnavailable, .busy, refusal.message, headers: headers)
        default: self = .unauthenticated
        }
    }

    /// The answer a refused device request becomes.
    init(_ refusal: DeviceRefusal) {
        switch refusal.code {
        case .unauthenticated:
            self.init(
                .unauthorized, .unauthenticated, refusal.message,
                headers: [.wwwAuthenticate: "Bearer realm=\"msi-hub devices\""])
        case .topicNotFound: self.init(.notFound, .topicNotFound, refusal.message)
        case .forcedSubscription: self.init(.conflict, .forcedSubscription, refusal.message)
        case .registrationTaken: self.init(.conflict, .conflict, refusal.message)
        case .invalidQuietHours: self.init(.unprocessableContent, .invalidQuietHours, refusal.message)
        default: self.init(.unprocessableContent, .invalidField, refusal.message)
        }
    }

    /// The answer a refused group request becomes: 404 naming what is missing, 422 naming the field.
    init(_ refusal: RoomRefusal) {
        switch refusal.code {
        case .notAMember: self.init(.forbidden, .notAMember, refusal.message)
        case .postingNotAllowed: self.init(.forbidden, .postingNotAllowed, refusal.message)
        case .notAManager: self.init(.forbidden, .notAManager, refusal.message)
        case .leaveNotAllowed: self.init(.forbidden, .leaveNotAllowed, refusal.message)
        case .tooManyPosts:
            self.init(
                .tooManyRequests, .tooManyRequests, refusal.message,
                headers: [.retryAfter: String(refusal.retryAfterSeconds ?? 60)])
        }
    }

    init(_ refusal: EventRefusal) {
        switch refusal.code {
        case .eventNotFound: self.init(.notFound, .eventNotFound, refusal.message)
        case .occurrenceNotFound: self.init(.notFound, .occurrenceNotFound, refusal.message)
        case .editConflict: self.init(.conflict, .conflict, refusal.message)
        case .invalidID: self.init(.unprocessableContent, .invalidID, refusal.message)
        default: self.init(.unprocessableContent, .invalidSchedule, refusal.message)
        }
    }

    init(_ refusal: GroupRefusal) {
        switch refusal.code {
        case .groupNotFound: self.init(.notFound, .groupNotFound, refusal.message)
        case .memberNotFound: self.init(.notFound, .memberNotFound, refusal.message)
        case .invalidID: self.init(.unprocessableContent, .invalidID, refusal.message)
        case .erasedPerson: self.init(.conflict, .personErased, refusal.message)
        default: self.init(.unprocessableContent, .invalidField, refusal.message)
        }
    }

    private static func code(for status: HTTPResponse.Status) -> Code {
        switch status {
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .contentTooLarge: .bodyTooLarge
        case .unauthorized: .unauthenticated
        case .forbidden: .forbidden
        case .tooManyRequests: .tooManyRequests
        case .serviceUnavailable: .databaseUnavailable
        case .internalServerError: .internalError
        default: .badRequest
        }
    }

    private static func message(for status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "no such route"
        case .contentTooLarge: "the request body is too large"
        default: status.reasonPhrase
        }
    }
}
