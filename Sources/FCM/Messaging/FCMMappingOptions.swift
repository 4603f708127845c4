/// The choices the mapping leaves to configuration.
public struct FCMMappingOptions: Sendable, Hashable {
    /// FCM's strictest documented payload limit for topic messages.
    public static let defaultPayloadLimit = 2048
    /// FCM's longest time to live, 4 weeks; longer ttls are sent as this.
    public static let maximumTTLSeconds: Int64 = 2_419_200

    /// Sets `validate_only`: FCM checks the request and sends nothing (`FCM_MODE=validate`).
    public var validateOnly: Bool
    /// The most payload bytes a request may carry: the compact JSON of its `data` object plus that of its
    /// `notification` object, as UTF-8. Over it, text is cut at a character boundary.
    public var payloadLimit: Int

    /// Options; the defaults send for real with a 2048-byte payload limit.
    public init(validateOnly: Bool = false, payloadLimit: Int = FCMMappingOptions.defaultPayloadLimit) {
        self.validateOnly = validateOnly
        self.payloadLimit = payloadLimit
    }
}
