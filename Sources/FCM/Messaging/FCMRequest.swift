/// One request body for `POST /v1/projects/{project_id}/messages:send`.
public struct FCMRequest: Sendable, Hashable {
    /// Which component of the message this is.
    public var component: FCMComponent
    /// The JSON body, UTF-8.
    public var body: [UInt8]
    /// The payload size as the mapping measures it (see `FCMMappingOptions.payloadLimit`).
    public var payloadSize: Int
    /// Whether text was cut to fit the payload limit (the data then carries `truncated: "true"`).
    public var isTruncated: Bool

    /// A request body; the mapping makes these.
    public init(component: FCMComponent, body: [UInt8], payloadSize: Int, isTruncated: Bool) {
        self.component = component
        self.body = body
        self.payloadSize = payloadSize
        self.isTruncated = isTruncated
    }
}
