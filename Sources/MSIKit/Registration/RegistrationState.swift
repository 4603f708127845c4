/// How far this device's set-up with the hub has got; kept in the library's database so a start resumes it.
public enum RegistrationState: Sendable, Hashable {
    /// The hub does not know this device yet.
    case notRegistered
    /// The hub knows the device (it has an id and a secret) but the Forced and Recommended subscriptions have not
    /// all been made yet; the next `start()` finishes them.
    case registered(deviceID: String)
    /// Registered and subscribed to every Forced and Recommended subject of the cube at initialisation.
    case initialised(deviceID: String)

    /// The device's id on the hub, once registered.
    public var deviceID: String? {
        switch self {
        case .notRegistered: nil
        case .registered(let id), .initialised(let id): id
        }
    }
}
