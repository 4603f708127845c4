/// How a subject's messages reach phones (the subject's `opt.distribution`, a message's `dist`): the spec's two kinds
/// of message, as every layer names them (the cube, the relay's mapping, the portal).
public enum Distribution: String, Sendable, Hashable, CaseIterable, Codable {
    /// A push notification plus the message in the app: a pop-up and data, two FCM requests.
    case alert = "Alert"
    /// The message in the app only, delivered silently: data only, one FCM request.
    case information = "Information"
}
