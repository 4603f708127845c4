import DAO
import HubCore
import Hummingbird
import Mongo

/// An error answered to a client: a status and `{"error": {"code": ..., "message": ...}}`.
public struct HubError: HTTPResponseError, Sendable {
    /// The snake_case code a client switches on; every code the hub answers is a static member here (and is
    /// listed in `openapi.json`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: String, CaseIterable {
            case malformedJSON = "malformed_json", invalidBody = "invalid_body", duplicateKey = "duplicate_key"
            case missingField = "missing_field", invalidField = "invalid_field", fieldTooLong = "field_too_long"
            case emptyField = "empty_field", invalidID = "invalid_id", invalidQuery = "invalid_query"
            case badRequest = "bad_request", incompleteBody = "incomplete_body"
            case unsupportedMediaType = "unsupported_media_type", bodyTooLarge = "body_too_large"
            case unauthenticated, forbidden, subjectAccessDenied = "subject_access_denied"
            case notFound = "not_found", channelNotFound = "channel_not_found", areaNotFound = "area_not_found"
            case subjectNotFound = "subject_not_found", topicNotFound = "topic_not_found"
            case messageNotFound = "message_not_found", userNotFound = "user_not_found", tokenNotFound =
                "token_not_found"
            case groupNotFound = "group_not_found", memberNotFound = "member_not_found", deviceNotFound =
                "device_not_found"
            case methodNotAllowed = "method_not_allowed", conflict, distributionMismatch = "distribution_mismatch"
            case tooManyRequests = "too_many_requests", databaseUnavailable = "database_unavailable", busy
            case tooManyConnections = "too_many_connections"
            case forcedSubscription = "forced_subscription", personErased = "person_erased"
            case idempotencyKeyReused = "idempotency_key_reused", writeOutcomeUnknown = "write_outcome_unknown"
            case invalidAssertion = "invalid_assertion"
            case assertionReplayed = "assertion_replayed"
            case invalidRecipients = "invalid_recipients", recipientAccessDenied = "recipient_access_denied"
            case invalidData = "invalid_data", relayBehind = "relay_behind"
            case invalidUrgency = "invalid_urgency", invalidQuietHours = "invalid_quiet_hours"
            case notBound = "not_bound", invalidSettings = "invalid_settings"
            case invalidAck = "invalid_ack"
            case invalidTranslations = "invalid_translations", invalidImage = "invalid_image", invalidKind =
                "invalid_kind"
            case invalidExpiry = "invalid_expiry", invalidDisplay = "invalid_display", invalidSample = "invalid_sample"
            case invalidWebhook = "invalid_webhook", webhookNotFound = "webhook_not_found"
            case internalError = "internal_error"
            case messageWithdrawn = "message_withdrawn"
            case approvalSelf = "approval_self", approvalNeedsUser = "approval_needs_user"
            case approvalAccessDenied = "approval_access_denied", approvalNotPending = "approval_not_pending"
            case approvalExpired = "approval_expired", overrideForbidden = "override_forbidden"
            case reasonRequired = "reason_required"
            case approvalStale = "approval_stale", approvalPending = "approval_pending"
            case versionRequired = "version_required", settingsInvalid = "settings_invalid"
            case notAMember = "not_a_member", postingNotAllowed = "posting_not_allowed"
            case notAManager = "not_a_manager", leaveNotAllowed = "leave_not_allowed"
            case eventNotFound = "event_not_found", occurrenceNotFound = "occurrence_not_found"
            case invalidSchedule = "invalid_schedule"
        }
        fileprivate let value: Value
        fileprivate init(_ value: Value) { self.value = value }

        /// 400: the body is not valid JSON.
        public static let malformedJSON = Code(.malformedJSON)
        /// 422: valid JSON that is not an object, or holds a `$`/`.` key, or nests too deep.
        public static let invalidBody = Code(.invalidBody)
        /// 422: a key given twice in one JSON object.
        public static let duplicateKey = Code(.duplicateKey)
        /// 422: a required field is absent.
        public static let missingField = Code(.missingField)
        /// 422: a field of the wrong type or outside its values.
        public static let invalidField = Code(.invalidField)
        /// 422: a string longer than its limit.
        public static let fieldTooLong = Code(.fieldTooLong)
        /// 422: a string that must not be empty is.
        public static let emptyField = Code(.emptyField)
        /// 400: a path parameter that is not a 24-hex ObjectId.
        public static let invalidID = Code(.invalidID)
        /// 400: a query parameter out of its range or form.
        public static let invalidQuery = Code(.invalidQuery)
        /// 400: a request HTTP itself refuses.
        public static let badRequest = Code(.badRequest)
        /// 400: the body ended before its `Content-Length`.
        public static let incompleteBody = Code(.incompleteBody)
        /// 415: the body is not JSON.
        public static let unsupportedMediaType = Code(.unsupportedMediaType)
        /// 413: the body is larger than the limit.
        public static let bodyTooLarge = Code(.bodyTooLarge)
        /// 401: no credentials, or credentials that do not check out.
        public static let unauthenticated = Code(.unauthenticated)
        /// 403: the caller's role may not do this.
        public static let forbidden = Code(.forbidden)
        /// 403: the caller is not on an access list on the way to the subject.
        public static let subjectAccessDenied = Code(.subjectAccessDenied)
        /// 404: no such route.
        public static let notFound = Code(.notFound)
        /// 404s naming what was not found.
        public static let channelNotFound = Code(.channelNotFound)
        public static let areaNotFound = Code(.areaNotFound)
        public static let subjectNotFound = Code(.subjectNotFound)
        public static let topicNotFound = Code(.topicNotFound)
        public static let messageNotFound = Code(.messageNotFound)
        public static let userNotFound = Code(.userNotFound)
        public static let tokenNotFound = Code(.tokenNotFound)
        public static let groupNotFound = Code(.groupNotFound)
        /// 404: the person is not a member of the group.
        public static let memberNotFound = Code(.memberNotFound)
        /// 404: no device has the id (only an admin is told: to a device's own routes an unknown id is 401).
        public static let deviceNotFound = Code(.deviceNotFound)
        /// 405: the path exists, the method does not (`Allow` lists those that do).
        public static let methodNotAllowed = Code(.methodNotAllowed)
        /// 409: the element exists already.
        public static let conflict = Code(.conflict)
        /// 422: the message's distribution is not its subject's.
        public static let distributionMismatch = Code(.distributionMismatch)
        /// 409: a device cannot leave a Forced subject.
        public static let forcedSubscription = Code(.forcedSubscription)
        /// 409: the person's data was erased within `ERASURE_BLOCK_DAYS`; a roster does not bring them back.
        public static let personErased = Code(.personErased)
        /// 429: throttled; `Retry-After` says when to try again.
        public static let tooManyRequests = Code(.tooManyRequests)
        /// 503: the database is unavailable; `Retry-After` says when to try again.
        public static let databaseUnavailable = Code(.databaseUnavailable)
        /// 503: every password check is taken and the line for them is full; `Retry-After` says when to try again.
        public static let busy = Code(.busy)
        /// 503: the hub has `HTTP_MAX_CONNECTIONS` connections open; answered before the request is read, then closed.
        public static let tooManyConnections = Code(.tooManyConnections)
        /// 422: the `Idempotency-Key` was used within 24 hours for another body.
        public static let idempotencyKeyReused = Code(.idempotencyKeyReused)
        /// 503: the database did not confirm the write before the deadline: it may or may not be stored (retry with
        /// the same `Idempotency-Key` to settle it); `Retry-After` says when.
        public static let writeOutcomeUnknown = Code(.writeOutcomeUnknown)
        /// 401: a person assertion that does not verify, or person binding is not configured (the message says why).
        public static let invalidAssertion = Code(.invalidAssertion)
        /// 401: a person assertion that verifies but has bound a device already: each binds once.
        public static let assertionReplayed = Code(.assertionReplayed)
        /// 422: a message names both a topic and persons or groups, or `to` is malformed.
        public static let invalidRecipients = Code(.invalidRecipients)
        /// 403: the caller may not send to a person directly (no right `direct`) or to a group not open to them.
        public static let recipientAccessDenied = Code(.recipientAccessDenied)
        /// 422: a message's `data` has a reserved or malformed key, or too many bytes.
        public static let invalidData = Code(.invalidData)
        /// 503: the relay to FCM is further behind than `RELAY_MAX_BACKLOG_SECONDS`; nothing was stored; `Retry-After`
        /// says when to try again.
        public static let relayBehind = Code(.relayBehind)
        /// 422: a message's `urgency` is not passive, active, time-sensitive or critical.
        public static let invalidUrgency = Code(.invalidUrgency)
        /// 422: a message's `ack` breaks its rules (responses, `within_s`, `resend`).
        public static let invalidAck = Code(.invalidAck)
        /// 422: a message's `lang` or `translations` break their rules.
        public static let invalidTranslations = Code(.invalidTranslations)
        /// 422: a message's `image` is not an https URL of at most 1 KB.
        public static let invalidImage = Code(.invalidImage)
        /// 422: a message's `kind` or `dismissible` break their rules.
        public static let invalidKind = Code(.invalidKind)
        /// 422: a message's `expires_at` is not a time ahead (after `send_at`), in Unix ms or RFC 3339.
        public static let invalidExpiry = Code(.invalidExpiry)
        /// 422: a message's `display` is not a boolean, or a non-display message has no `data` or something to show.
        public static let invalidDisplay = Code(.invalidDisplay)
        /// 422: a message's `sample` is not in (0, 1), is not of a topic, or its `cohort` is malformed.
        public static let invalidSample = Code(.invalidSample)
        /// 422: a device's `quiet_hours` is not `{"from": "HH:MM", "to": "HH:MM", "tz": IANA zone}` with from != to.
        public static let invalidQuietHours = Code(.invalidQuietHours)
        /// 409: a person's settings asked of a device bound to no person.
        public static let notBound = Code(.notBound)
        /// 422: a person's settings that are not as the settings take them (a field, a delivery mode, a locale).
        public static let invalidSettings = Code(.invalidSettings)
        /// 422: a webhook's URL or events that the rules refuse.
        public static let invalidWebhook = Code(.invalidWebhook)
        /// 404: no webhook has the id.
        public static let webhookNotFound = Code(.webhookNotFound)
        /// 500: a bug.
        public static let internalError = Code(.internalError)
        /// 409: the message is withdrawn: it can no longer be corrected or withdrawn.
        public static let messageWithdrawn = Code(.messageWithdrawn)
        /// 403: the author may not approve their own message.
        public static let approvalSelf = Code(.approvalSelf)
        /// 403: an API token may not approve a message; a person must.
        public static let approvalNeedsUser = Code(.approvalNeedsUser)
        /// 403: the approver may not send where the message goes.
        public static let approvalAccessDenied = Code(.approvalAccessDenied)
        /// 409: the message does not (or no longer) await approval.
        public static let approvalNotPending = Code(.approvalNotPending)
        /// 409: the approval request expired: the message is never sent.
        public static let approvalExpired = Code(.approvalExpired)
        /// 403: only an admin may send past the approval rule (`override`).
        public static let overrideForbidden = Code(.overrideForbidden)
        /// 422: a rejection or an override needs a reason.
        public static let reasonRequired = Code(.reasonRequired)
        /// 409: the approval names a version of the text that is no longer the one awaiting approval.
        public static let approvalStale = Code(.approvalStale)
        /// 409: the message awaits approval: only its author may correct it.
        public static let approvalPending = Code(.approvalPending)
        /// 422: an approval names no version (`version` in the body, or `If-Match`).
        public static let versionRequired = Code(.versionRequired)
        /// 422: approval settings out of range (group size, timeout).
        public static let settingsInvalid = Code(.settingsInvalid)
        /// 403: the device's person is not a member of the room.
        public static let notAMember = Code(.notAMember)
        /// 403: the group lets staff alone post.
        public static let postingNotAllowed = Code(.postingNotAllowed)
        /// 403: only the group's managers may do this.
        public static let notAManager = Code(.notAManager)
        /// 403: the group does not let members leave by themselves.
        public static let leaveNotAllowed = Code(.leaveNotAllowed)
        /// 404: no event has the id.
        public static let eventNotFound = Code(.eventNotFound)
        /// 404: the event has no occurrence on the date.
        public static let occurrenceNotFound = Code(.occurrenceNotFound)
        /// 422: an event's time, zone, recurrence, exception date or reminder breaks its rules.
        public static let invalidSchedule = Code(.invalidSchedule)

        /// Every code, for the check that `openapi.json` lists them all.
        public static var allCases: [Code] { Value.allCases.map(Code.init) }

        /// The code on the wire.
        public var description: String { value.rawValue }
    }

    public var status: HTTPResponse.Status
    public var code: Code
    /// A sentence for a person.
    public var message: String
    /// Extra headers, such as `Retry-After` on a 503.
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: Code, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body: BSONDocument = ["error": ["code": .string(code.description), "message": .string(message)]]
        return JSONResponse.make(.document(body), status: status, headers: headers)
    }
}

extension HubError {
    /// 400: a path or query value that is not what it must be.
    static func badRequest(_ code: Code, _ message: String) -> HubError { HubError(.badRequest, code, message) }

    /// 422: valid JSON whose content fails validation.
    static func invalid(_ code: Code, _ message: String) -> HubError { HubError(.unprocessableContent, code, message) }

    /// 401: no credentials, or credentials that do not check out.
    static let unauthenticated = HubError(
        .unauthorized, .unauthenticated, "this request needs a user or an API token",
        headers: [.wwwAuthenticate: "Bearer realm=\"msi-hub\", Basic realm=\"msi-hub\""])

    /// 503: the database is out of reach; the client should retry shortly.
    static let databaseUnavailable = HubError(
        .serviceUnavailable, .databaseUnavailable, "the database is unavailable; try again shortly",
        headers: [.retryAfter: "2"])

    /// 503: a write sent to the database that it did not confirm in time: it may or may not have happened.
    static let writeOutcomeUnknown = HubError(
        .serviceUnavailable, .writeOutcomeUnknown,
        "the database did not confirm the write in time: it may or may not be stored; "
            + "retry with the same Idempotency-Key to send it once",
        headers: [.retryAfter: "2"])

    /// 400: the connection delivered less than `Content-Length` announced (the client stopped sending).
    static let incompleteBody = HubError(.badRequest, .incompleteBody, "the body ended before its Content-Length")

    /// 500: a bug; the details go to the log, never to the client.
    static let internalError = HubError(.internalServerError, .internalError, "the server failed to handle the request")

    /// The answer a DAO failure becomes.
    init(_ error: DAOError) {
        switch error.code {
        case .channelNotFound: self.init(.notFound, .channelNotFound, error.message)
        case .areaNotFound: self.init(.notFound, .areaNotFound, error.message)
        case .subjectNotFound: self.init(.notFound, .subjectNotFound, error.message)
        case .topicNotFound: self.init(.notFound, .topicNotFound, error.message)
        case .messageNotFound: self.init(.notFound, .messageNotFound, error.message)
        case .userNotFound: self.init(.notFound, .userNotFound, error.message)
        case .tokenNotFound: self.init(.notFound, .tokenNotFound, error.message)
        case .deviceNotFound: self.init(.notFound, .deviceNotFound, error.message)
        case .duplicate: self.init(.conflict, .conflict, error.message)
        case .unavailable: self = .databaseUnavailable
        case .outcomeUnknown: self = .writeOutcomeUnknown
        default: self = .internalError
        }
    }

    /// The answer a refused send becomes.
    init(_ refusal: SendRefusal) {
        switch refusal.code {
        case .fieldTooLong: self.init(.unprocessableContent, .fieldTooLong, refusal.message)
        case .emptyField: self.init(.unprocessableContent, .emptyField, refusal.message)
        case .topicNotFound: self.init(.notFound, .topicNotFound, refusal.message)
        case .distributionMismatch: self.init(.unprocessableContent, .distributionMismatch, refusal.message)
        case .alertNeedsDesc: self.init(.unprocessableContent, .emptyField, refusal.message)
        case .accessDenied: self.init(.forbidden, .subjectAccessDenied, refusal.message)
        case .idempotencyKeyReused: self.init(.unprocessableContent, .idempotencyKeyReused, refusal.message)
        case .invalidRecipients: self.init(.unprocessableContent, .invalidRecipients, refusal.message)
        case .groupNotFound: self.init(.notFound, .groupNotFound, refusal.message)
        case .recipientAccessDenied: self.init(.forbidden, .recipientAccessDenied, refusal.message)
        case .invalidData: self.init(.unprocessableContent, .invalidData, refusal.message)
        case .relayBehind: self.init(.serviceUnavailable, .relayBehind, refusal.message, headers: [.retryAfter: "5"])
        case .invalidUrgency: self.init(.unprocessableContent, .invalidUrgency, refusal.message)
        case .overridePreferencesForbidden: self.init(.forbidden, .overrideForbidden, refusal.message)
        case .invalidAck: self.init(.unprocessableContent, .invalidAck, refusal.message)
        case .invalidTranslations: self.init(.unprocessableContent, .invalidTranslations, refusal.message)
        case .invalidImage: self.init(.unprocessableContent, .invalidImage, refusal.message)
        case .invalidKind: self.init(.unprocessableContent, .invalidKind, refusal.message)
        case .invalidExpiry: self.init(.unprocessableContent, .invalidExpiry, refusal.message)
        case .invalidDisplay: self.init(.unprocessableContent, .invalidDisplay, refusal.message)
        case .invalidSample: self.init(.unprocessableContent, .invalidSample, refusal.message)
        default: self = .internalError
        }
    }
}
