import DAO
import HubTime
import HTTPTypes
import HubCore
import Hummingbird
import Mongo

/// Devices and their subscriptions (`DeviceService`): registration by the app, then the device's own routes,
/// authenticated by its secret (`Authorization: Bearer msd_...`). Registration tokens are never answered.
struct DeviceController {
    let services: HubServices
    let configuration: DeviceConfiguration

    func addRoutes(to router: Router<HubRequestContext>) {
        router.post("/device", use: register)
        router.get("/device/:deviceID", use: get)
        router.put("/device/:deviceID", use: update)
        router.delete("/device/:deviceID", use: delete)
        router.get("/device/:deviceID/subscriptions", use: subscriptions)
        router.put("/device/:deviceID/subscriptions/:topicKey", use: subscribe)
        router.delete("/device/:deviceID/subscriptions/:topicKey", use: unsubscribe)
        router.get("/device/:deviceID/messages", use: messages)
        router.put("/device/:deviceID/person", use: bind)
        router.delete("/device/:deviceID/person", use: unbind)
        router.post("/device/:deviceID/person/nonce", use: personNonce)
        router.get("/device/:deviceID/unread", use: unread)
        router.get("/device/:deviceID/person/settings", use: personSettings)
        router.put("/device/:deviceID/person/settings", use: changePersonSettings)
        router.get("/device/:deviceID/person/mutes", use: mutes)
        router.put("/device/:deviceID/person/mutes/:groupID", use: mute)
        router.delete("/device/:deviceID/person/mutes/:groupID", use: unmute)
    }

    /// GET /device/:deviceID/unread → `{"total", "groups": {"<group id>": n}}`: the messages to the device's person
    /// (persons, groups, rooms) none of their devices has opened or read (`opened`, `read` receipts); zero for a
    /// device bound to nobody.
    @Sendable func unread(request: Request, context: HubRequestContext) async throws -> Response {
        let counts = try await services.rooms.unread(of: try await device(context))
        return JSONResponse.make([
            "total": .int64(Int64(counts.total)),
            "groups": .document(
                BSONDocument(
                    counts.groups.sorted { $0.key < $1.key }.map { (key: $0.key, value: .int64(Int64($0.value))) })),
        ])
    }

    /// GET /device/:deviceID/person/mutes → `{"mutes": [{"group", "until"}]}`: the groups the device's person muted
    /// (on any of their devices) that are muted now.
    @Sendable func mutes(request: Request, context: HubRequestContext) async throws -> Response {
        let mutes = try await services.rooms.mutes(of: try await device(context))
        return JSONResponse.make(["mutes": .array(mutes.map { .document(Self.document($0)) })])
    }

    /// PUT /device/:deviceID/person/mutes/:groupID `{"until": Unix ms | null}` → 200 with the mute: every device of
    /// the person gets the group's messages in the background until then (null: until unmuted); time-sensitive and
    /// critical messages still sound.
    @Sendable func mute(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await device(context)
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let until: Int64?
        switch fields.document["until"] {
        case nil, .null?: until = nil
        case let value?:
            guard let number = value.int64Value else {
                throw HubError.invalid(.invalidField, "the field \"until\" must be a Unix time in ms or null")
            }
            until = number
        }
        let mute = try await services.rooms.mute(try GroupController.groupID(context), until: until, by: device)
        return JSONResponse.make(.document(Self.document(mute)))
    }

    /// DELETE /device/:deviceID/person/mutes/:groupID → 204 (also when the group was not muted).
    @Sendable func unmute(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try await services.rooms.unmute(try GroupController.groupID(context), by: try await device(context))
        return Response(status: .noContent)
    }

    /// GET /device/:deviceID/person/settings: the settings of the device's person (409 `not_bound` for a device bound
    /// to nobody).
    @Sendable func personSettings(request: Request, context: HubRequestContext) async throws -> Response {
        let settings = try await services.devices.personSettings(of: try await device(context))
        return JSONResponse.make(.document(Self.document(settings)))
    }

    /// PUT /device/:deviceID/person/settings `{"quiet_hours"?, "locale"?, "digest_hour"?, "delivery"?: {"subjects"?:
    /// {topic_key: mode}, "groups"?: {group id: mode}}}`: changes what the body names (null clears a field; mode
    /// `instant`, `digest` or `off`) for the device's person, and gives the person's quiet hours and locale to every
    /// device of theirs; 200 with the settings. 409 `forced_subscription` for a Forced subject turned `off`.
    @Sendable func changePersonSettings(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await device(context)
        var request = request
        let body = try await request.jsonObject(context: context)
        let change = try Self.personSettingsChange(body)
        let settings = try await services.devices.changePersonSettings(change, by: device)
        return JSONResponse.make(.document(Self.document(settings)))
    }

    /// The change a body of PUT /device/:deviceID/person/settings asks for.
    /// - Throws: `PersonSettingsRefusal.invalidSettings`, `DeviceRefusal.invalidQuietHours`.
    static func personSettingsChange(_ body: BSONDocument) throws -> PersonSettingsChange {
        func refuse(_ message: String) -> PersonSettingsRefusal { PersonSettingsRefusal(.invalidSettings, message) }
        let fields = ["quiet_hours", "locale", "digest_hour", "delivery"]
        if let unknown = body.elements.first(where: { !fields.contains($0.key) }) {
            throw refuse("the settings have no field \"\(unknown.key.prefix(40))\" (\(fields.joined(separator: ", ")))")
        }
        var change = PersonSettingsChange()
        change.fields.quietHours = try quietHours(FieldReader(document: body))
        func text(_ key: String, _ read: (String) throws -> String) throws -> String?? {
            switch body[key] {
            case nil: return nil
            case .null?: return .some(nil)
            case .string(let value)?: return .some(try read(value))
            default: throw refuse("\(key) must be a string or null")
            }
        }
        change.fields.locale = try text("locale", DeviceService.locale)
        change.fields.digestHour = try text("digest_hour", DeviceService.digestHour)
        if let delivery = body["delivery"] {
            guard let object = delivery.documentValue,
                object.elements.allSatisfy({ $0.key == "subjects" || $0.key == "groups" })
            else { throw refuse("delivery must be {\"subjects\": {topic_key: mode}, \"groups\": {group id: mode}}") }
            for (key, scope) in [("subjects", DeliveryScope.subject), ("groups", .group)] {
                guard let choices = object[key] else { continue }
                guard let choices = choices.documentValue else { throw refuse("delivery.\(key) must be an object") }
                for (id, value) in choices {
                    guard let mode = value.stringValue.flatMap(DeliveryMode.init(rawValue:)) else {
                        throw refuse("delivery.\(key): a mode is instant, digest or off")
                    }
                    change.delivery[scope, default: [:]][id] = mode
                }
            }
        }
        return change
    }

    /// A person's settings as the API shows them.
    static func document(_ settings: PersonSettings) -> BSONDocument {
        var quiet: BSONValue = .null
        if let hours = settings.quietHours {
            quiet = ["from": .string(hours.fromText), "to": .string(hours.toText), "tz": .string(hours.timeZoneID)]
        }
        func choices(_ scope: DeliveryScope) -> BSONValue {
            .document(
                BSONDocument(
                    (settings.delivery[scope] ?? [:]).sorted { $0.key < $1.key }
                        .map { (key: $0.key, value: .string($0.value.rawValue)) }))
        }
        return [
            "person": .string(settings.person), "quiet_hours": quiet,
            "locale": settings.locale.map(BSONValue.string) ?? .null,
            "digest_hour": settings.digestHour.map(BSONValue.string) ?? .null,
            "delivery": ["subjects": choices(.subject), "groups": choices(.group)],
        ]
    }

    /// A mute as the API shows it.
    static func document(_ mute: PersonMute) -> BSONDocument {
        ["group": .string(mute.group), "until": mute.until.map(BSONValue.int64) ?? .null]
    }

    /// POST /device: `{"registration", "platform", "locale"?, "app_version"?}`, with `Authorization: Bearer msd_...`
    /// when the device re-registers → 200 (a known registration with its device's secret: the same device, a new
    /// secret) or 201 (a new device; a known registration's old device is retired) with the device's id, its secret
    /// (shown once) and subscriptions. A `locale` naming a language ("hi-IN") also puts the device on the hub's own
    /// topic of that language (`lang-hi`), never listed among its subscriptions.
    @Sendable func register(request: Request, context: HubRequestContext) async throws -> Response {
        if let key = configuration.registrationKey, !Self.isAppKey(request.headers[.appKey], key) {
            throw HubError(.unauthorized, .unauthenticated, "registering a device needs the app's key in X-App-Key")
        }
        if let address = context.clientAddress,
            try await !services.devices.mayRegister(from: address, perMinute: configuration.registrationsPerMinute)
        {
            throw HubError(
                .tooManyRequests, .tooManyRequests, "too many registrations from this address; try again in a minute",
                headers: [.retryAfter: "60"])
        }
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let registration = try fields.string("registration", maxLength: 4096, allowEmpty: false)
        let platform: Platform = try fields.oneOf("platform")
        let locale = try fields.optionalString("locale", maxLength: 35)
        let appVersion = try fields.optionalString("app_version", maxLength: 64)
        let result = try await services.devices.register(
            registration: registration, platform: platform, locale: locale,
            appVersion: appVersion, presenting: context.deviceSecret)
        var body = services.devices.view(result.device)
        body["device_secret"] = .string(result.secret)
        body["subscriptions"] = .array(result.subscriptions.map { .document($0.document) })
        return JSONResponse.make(.document(body), status: result.created ? .created : .ok)
    }

    /// Whether `given` is the app's key, compared in time that tells neither where they differ nor how long the key
    /// is (their SHA-256 digests are compared).
    static func isAppKey(_ given: String?, _ key: String) -> Bool {
        guard let given else { return false }
        return Secret.constantTimeEquals(Secret.hash(given), Secret.hash(key))
    }

    /// GET /device/:deviceID
    @Sendable func get(request: Request, context: HubRequestContext) async throws -> Response {
        JSONResponse.make(.document(services.devices.view(try await device(context))))
    }

    /// PUT /device/:deviceID: `{"registration"?, "locale"?, "app_version"?, "quiet_hours"?}`; a new registration
    /// moves every subscription to it; a new locale moves the device to its language's topic; `quiet_hours` (`{"from": "22:00", "to": "07:00", "tz": "Europe/Berlin"}`, or
    /// null to clear) sets when passive and active messages wait (422 `invalid_quiet_hours`).
    @Sendable func update(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await device(context)
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let registration = try fields.optionalString("registration", maxLength: 4096)
        let locale = try fields.optionalString("locale", maxLength: 35)
        let appVersion = try fields.optionalString("app_version", maxLength: 64)
        let quietHours = try Self.quietHours(fields)
        var updated = try await services.devices.update(
            device, registration: registration, locale: locale,
            appVersion: appVersion)
        if let quietHours { updated = try await services.devices.setQuietHours(updated, quietHours) }
        return JSONResponse.make(.document(services.devices.view(updated)))
    }

    /// The body's `quiet_hours`: nil when absent (unchanged), `.some(nil)` for null (cleared), else the window
    /// (`DeviceService.quietHours(from:to:tz:)`).
    /// - Throws: `DeviceRefusal.invalidQuietHours` (422 `invalid_quiet_hours`) for any other shape.
    static func quietHours(_ fields: FieldReader) throws -> QuietHours?? {
        guard let value = fields.document["quiet_hours"] else { return nil }
        if value.isNull { return .some(nil) }
        guard let object = value.documentValue,
            object.elements.allSatisfy({ ["from", "to", "tz"].contains($0.key) }),
            let from = object["from"]?.stringValue, let to = object["to"]?.stringValue,
            let tz = object["tz"]?.stringValue
        else {
            throw DeviceRefusal(
                .invalidQuietHours,
                "quiet_hours must be {\"from\": \"HH:MM\", \"to\": \"HH:MM\", \"tz\": \"Area/City\"} or null")
        }
        return .some(try DeviceService.quietHours(from: from, to: to, tz: tz))
    }

    /// DELETE /device/:deviceID: the device and, through the reconciler, its FCM subscriptions; by the device (its
    /// secret) or by an admin (a lost phone; recorded in the audit log as `device.delete`).
    @Sendable func delete(request: Request, context: HubRequestContext) async throws -> Response {
        try await services.devices.delete(try await deviceOrAdminsChoice(context))
        return Response(status: .noContent)
    }

    /// GET /device/:deviceID/subscriptions: "View My Subscriptions".
    @Sendable func subscriptions(request: Request, context: HubRequestContext) async throws -> Response {
        let subscriptions = try await services.devices.subscriptions(of: try await device(context))
        return JSONResponse.make(["subscriptions": .array(subscriptions.map { .document($0.document) })])
    }

    /// PUT /device/:deviceID/subscriptions/:topicKey
    @Sendable func subscribe(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await device(context)
        let subscription = try await services.devices.subscribe(device, to: try topicKey(context))
        return JSONResponse.make(.document(subscription.document))
    }

    /// DELETE /device/:deviceID/subscriptions/:topicKey; 409 `forced_subscription` for a Forced subject.
    @Sendable func unsubscribe(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await device(context)
        try await services.devices.unsubscribe(device, from: try topicKey(context))
        return Response(status: .noContent)
    }

    /// GET /device/:deviceID/messages?since=&limit=&cursor=: what the device missed, the messages of its
    /// subscriptions from `since` (Unix ms, inclusive), oldest first, without expired ones.
    @Sendable func messages(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await device(context)
        let parameters = try PageParameters(request.uri.queryParameters)
        let page = try await services.devices.catchUp(
            device, since: parameters.since ?? 0, limit: parameters.limit,
            after: parameters.after)
        return PageParameters.response(page)
    }

    /// PUT /device/:deviceID/person: `{"assertion": "<JWT>"}` binds the device to the person a verified assertion
    /// names → 200 with the device (`person` shown); 401 `invalid_assertion` with the reason (a missing or wrong
    /// `nonce` when `PERSON_ASSERTION_NONCE=required`), 401 `assertion_replayed` for one that bound a device already;
    /// nothing changed.
    @Sendable func bind(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await device(context)
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let assertion = try fields.string("assertion", maxLength: 16 * 1024, allowEmpty: false)
        let bound = try await services.devices.bind(device, assertion: assertion)
        return JSONResponse.make(.document(services.devices.view(bound)))
    }

    /// DELETE /device/:deviceID/person: the device no longer belongs to a person (logout) → 204.
    @Sendable func unbind(request: Request, context: HubRequestContext) async throws -> Response {
        try await services.devices.unbind(try await device(context))
        return Response(status: .noContent)
    }

    /// POST /device/:deviceID/person/nonce → 200 `{"nonce", "expires_at"}`: the nonce the device's next assertion
    /// carries when `PERSON_ASSERTION_NONCE=required` (single use, 5 minutes; a new one replaces the last).
    @Sendable func personNonce(request: Request, context: HubRequestContext) async throws -> Response {
        let issued = try await services.devices.personNonce(for: try await device(context))
        return JSONResponse.make(["nonce": .string(issued.nonce), "expires_at": .int64(issued.expiresAt)])
    }

    /// The device the path names, when the request carries its secret.
    private func device(_ context: HubRequestContext) async throws -> Device {
        try await services.devices.authenticate(
            try context.parameters.objectID("deviceID"), secret: context.deviceSecret)
    }

    /// The device the path names, for the device itself (its secret) or for an admin (a user or token, without a
    /// device secret): a lost or stolen phone is removed by the school. Another caller's role is 403.
    /// - Throws: `HubError` 403; `DAOError.deviceNotFound` (404, told to an admin only); `DeviceRefusal`.
    private func deviceOrAdminsChoice(_ context: HubRequestContext) async throws -> Device {
        guard context.deviceSecret == nil, context.identity != nil else { return try await device(context) }
        try context.requireRole([.admin])
        return try await services.devices.device(try context.parameters.objectID("deviceID"))
    }

    private func topicKey(_ context: HubRequestContext) throws -> String {
        guard let key = context.parameters.get("topicKey"), (1...200).contains(key.utf8.count) else {
            throw HubError.badRequest(.invalidID, "topicKey must be a subject's topic_key")
        }
        return key
    }
}

/// GET /audience?topic_key=K (communicator or admin): the devices a message to K will reach.
struct AudienceController {
    let services: HubServices

    /// The route on `senders`, the group of communicators and admins.
    func addRoutes(to senders: RouterGroup<HubRequestContext>) {
        senders.get("/audience", use: audience)
    }

    @Sendable func audience(request: Request, context: HubRequestContext) async throws -> Response {
        guard let topicKey = request.uri.queryParameters.get("topic_key"), (1...200).contains(topicKey.utf8.count)
        else {
            throw HubError.badRequest(.invalidQuery, "topic_key must name a subject's topic")
        }
        return JSONResponse.make(.document(try await services.devices.audience(of: topicKey).document))
    }
}

extension HTTPField.Name {
    /// The app's shared registration key (`DEVICE_REGISTRATION_KEY`).
    static let appKey = Self("X-App-Key")!
}
