import Mongo

/// The collections msi-hub uses: the legacy hub's two and msi-hub's own additions.
public enum CollectionName {
    /// One document per channel, areas and subjects nested (legacy).
    public static let icube = "icube"
    /// Every message sent (legacy), with msi-hub's `relay` sub-document.
    public static let message = "message"
    /// Portal and API users.
    public static let users = "users"
    /// API tokens, stored as hashes.
    public static let tokens = "tokens"
    /// Portal sessions, removed once expired (`ExpiringCollection`).
    public static let sessions = "sessions"
    /// Erasures of persons' data: one job per person under the keyed hash of their id (`ErasureDAO`).
    public static let erasures = "erasures"
    /// Persons erased lately, by the keyed hash of their id, so a roster sync does not bring them back
    /// (`ERASURE_BLOCK_DAYS`); removed once expired (`ExpiringCollection`).
    public static let erasureBlocks = "erasure_blocks"
    /// Portal sign-ins through the OpenID provider begun and not yet finished (state, nonce, PKCE verifier), under
    /// the pre-login cookie's hash; removed once expired (`ExpiringCollection`).
    public static let signInAttempts = "sign_in_attempts"
    /// Failed portal logins, counted to throttle guessing; removed an hour after (`ExpiringCollection`).
    public static let loginFailures = "login_failures"
    /// One document per hub process: the fence it writes to know its change stream has caught up
    /// (`FenceDAO`); removed an hour after the process stops writing it.
    public static let fences = "fences"
    /// Phones registered with the hub (`DeviceDAO`); registration tokens and secrets' hashes, never listed.
    public static let devices = "devices"
    /// What each registration should be subscribed to at FCM and whether FCM has it (`SubscriptionDAO`).
    public static let subscriptions = "device_subscriptions"
    /// The subjects on their way to every registered device, one document per topic (`RolloutDAO`).
    public static let rollouts = "subscription_rollouts"
    /// Counters per key and time window, shared by every replica (`RateWindowDAO`); removed once expired (`ExpiringCollection`).
    public static let rateWindows = "rate_windows"
    /// Named leases: which process runs a job that must run in one process at a time, and until when (`LeaseDAO`).
    public static let leases = "leases"
    /// The `Idempotency-Key`s of POST /message, with the message each one stands for; removed 24 hours
    /// after (`IdempotencyKeyDAO`, `ExpiringCollection`).
    public static let idempotencyKeys = "idempotency_keys"
    /// One document per FCM project whose relay FCM asked to pause (503, 429, time-outs): until when
    /// (`RelayPauseDAO`), read by every replica's relay.
    public static let relayPause = "relay_pause"
    /// One document per relay worker that ever ran: how far it got with the messages it stored and sends
    /// itself, and until when it is alive (`RelayProgressDAO`).
    public static let relayProgress = "relay_progress"
    /// Named lists of person ids and who may send to them, one document a group (`GroupDAO`).
    public static let groups = "groups"
    /// The members of the groups: one document per group and person (`GroupDAO`).
    public static let groupMembers = "group_members"
    /// One document per message to persons and groups and device it reaches: how FCM answered (`DeliveryDAO`);
    /// registration tokens, never listed.
    public static let deliveries = "deliveries"
    /// The endpoints events are POSTed to, with their signing secrets (`WebhookDAO`); the secrets never listed.
    public static let webhooks = "webhooks"
    /// The webhook outbox: one document per event and webhook subscribed to it, until delivered or given up on,
    /// then kept a week for the deliveries list (`WebhookDeliveryDAO`).
    public static let webhookDeliveries = "webhook_deliveries"
    /// What the app told the hub of each message on each device (received, opened, acknowledged), one document per
    /// (message, device, event) (`ReceiptDAO`).
    public static let receipts = "receipts"
    /// One document per message with receipts: their counts, kept as receipts arrive (`ReceiptDAO`).
    public static let receiptCounts = "receipt_counts"
    /// The audit log: append-only, hash-chained, one document per recorded action (`AuditDAO`); never a secret.
    public static let audit = "audit"
    /// One key per person, user and device the audit log names, by pseudonym, that seals their clear id in its
    /// entries (`AuditKeyDAO`); an erasure deletes the person's and their devices' keys.
    public static let auditKeys = "audit_keys"
    /// Which persons acknowledged a message to persons and groups, one document per (message, person) whatever device
    /// they answered on (`PersonAcknowledgementDAO`).
    public static let personAcknowledgements = "person_acknowledgements"
    /// Settings an admin changes while the hub runs, shared by every replica: one document per setting
    /// (`SettingsDAO`; `_id: "approval"` holds the approval rules).
    public static let settings = "settings"
    /// The person assertions that bound a device, by replay key (a hash, never the assertion), until they expire
    /// (`UsedAssertionDAO`): each binds once, on every replica.
    public static let usedAssertions = "used_assertions"
    /// The groups each person muted, and until when (`PersonMuteDAO`): every device of the person, now and later.
    public static let personMutes = "person_mutes"
    /// What each person has read of their groups' messages, and their unread messages named to them
    /// (`PersonUnreadDAO`).
    public static let personUnread = "person_unread"
    /// A person's settings: quiet hours, locale, digest hour (`PersonSettingsDAO`).
    public static let personSettings = "person_settings"
    /// A person's delivery choices per subject and group other than instant (`PersonSettingsDAO`).
    public static let personDeliveries = "person_deliveries"
    /// Each person's next daily digest, where its window starts and the last one sent (`DigestScheduleDAO`).
    public static let digestSchedule = "digest_schedule"
    /// Each group's last message number, for unread counts (`PersonUnreadDAO`).
    public static let unreadSequences = "unread_sequences"
    /// Scheduled events, their occurrences' rota and where their reminders stand (`EventDAO`).
    public static let events = "events"
    /// Each message's numbers in the groups it was sent to, for unread counts (`PersonUnreadDAO`).
    public static let unreadMessages = "unread_messages"
    /// The archive's rare queues: which messages are held for approval, to review, with a correction waiting, live
    /// banners, or escalating (`MessageQueueDAO`).
    public static let messageQueues = "message_queues"
}

/// The indexes msi-hub needs, created at start-up; creating them again changes nothing.
public enum DatabaseIndexes {
    /// Creates every index msi-hub's queries rely on.
    /// - Throws: `DAOError` when the database refuses or cannot be reached.
    public static func ensure(in database: MongoDatabase) async throws {
        try await mapErrors {
            // Before the plain indexes on the same fields are made.
            try await ExpirySweepDAO.retireTTLIndexes(in: database)
            try await database.collection(CollectionName.icube).createIndexes([
                IndexModel(keys: ["areas.subjects.topic_key": 1], name: "areas.subjects.topic_key")
            ])
            let messages = database.collection(CollectionName.message)
            for name in AcknowledgementDAO.retiredIndexes { try await messages.dropIndex(named: name) }
            try await database.collection(CollectionName.messageQueues).createIndexes(MessageQueueDAO.indexes)
            try await MessageQueueDAO.moveFromArchiveIndexes(in: database)
            try await messages.createIndexes([
                IndexModel(keys: ["msi_key": 1], name: "msi_key", unique: true),
                IndexModel(keys: ["topic_key": 1, "timestamp": -1, "_id": -1], name: "topic_key.timestamp"),
                IndexModel(keys: ["timestamp": -1, "_id": -1], name: "timestamp"),
                // A person's and their groups' messages, for a device's catch-up.
                IndexModel(keys: ["to.persons": 1, "timestamp": 1, "_id": 1], name: "to.persons.timestamp"),
                IndexModel(keys: ["to.groups": 1, "timestamp": 1, "_id": 1], name: "to.groups.timestamp"),
                // The relay's due messages. Its rarer queues are beside the archive (`MessageQueueDAO`).
                OutboxDAO.index,
            ])
            try await database.collection(CollectionName.users).createIndexes([
                IndexModel(keys: ["username": 1], name: "username", unique: true)
            ])
            try await TokenDAO.backfillLiveNames(in: database)
            try await database.collection(CollectionName.tokens).createIndexes([
                IndexModel(keys: ["hash": 1], name: "hash", unique: true),
                IndexModel(keys: ["name": 1], name: "name"),
                TokenDAO.liveNameIndex,
            ])
            try await database.collection(CollectionName.sessions).createIndexes(SessionDAO.indexes)
            try await database.collection(CollectionName.loginFailures).createIndexes(LoginFailureDAO.indexes)
            try await database.collection(CollectionName.signInAttempts).createIndexes(SignInAttemptDAO.indexes)
            try await database.collection(CollectionName.erasures).createIndexes(ErasureDAO.indexes)
            try await database.collection(CollectionName.erasureBlocks).createIndexes(PersonDataDAO.blockIndexes)
            try await database.collection(CollectionName.fences).createIndexes(FenceDAO.indexes)
            try await database.collection(CollectionName.devices).createIndexes(DeviceDAO.indexes)
            let subscriptions = database.collection(CollectionName.subscriptions)
            try await subscriptions.createIndexes(SubscriptionDAO.indexes)
            for name in SubscriptionDAO.retiredIndexes { try await subscriptions.dropIndex(named: name) }
            try await database.collection(CollectionName.rateWindows).createIndexes(RateWindowDAO.indexes)
            try await database.collection(CollectionName.idempotencyKeys).createIndexes(IdempotencyKeyDAO.indexes)
            try await database.collection(CollectionName.groupMembers).createIndexes(GroupDAO.indexes)
            let deliveries = database.collection(CollectionName.deliveries)
            try await deliveries.createIndexes(DeliveryDAO.indexes)
            for name in DeliveryDAO.retiredIndexes { try await deliveries.dropIndex(named: name) }
            try await database.collection(CollectionName.quietDeferrals).createIndexes(QuietDeferralDAO.indexes)
            try await database.collection(CollectionName.personAcknowledgements)
                .createIndexes(PersonAcknowledgementDAO.indexes)
            try await database.collection(CollectionName.webhookDeliveries).createIndexes(WebhookDeliveryDAO.indexes)
            try await database.collection(CollectionName.audit).createIndexes(AuditDAO.indexes)
            try await database.collection(CollectionName.usedAssertions).createIndexes(UsedAssertionDAO.indexes)
            try await database.collection(CollectionName.personMutes).createIndexes(PersonMuteDAO.indexes)
            try await database.collection(CollectionName.personUnread).createIndexes(PersonUnreadDAO.indexes)
            try await database.collection(CollectionName.personDeliveries)
                .createIndexes(PersonSettingsDAO.deliveryIndexes)
            try await database.collection(CollectionName.events).createIndexes(EventDAO.indexes)
            try await database.collection(CollectionName.digestSchedule).createIndexes(DigestScheduleDAO.indexes)
        }
    }
}
