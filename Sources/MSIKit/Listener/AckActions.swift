#if canImport(UserNotifications) && !os(Linux)
    import UserNotifications
#endif

/// Acknowledgements answered from the lock screen: the hub puts a request for an acknowledgement with n responses in
/// the APNs category `MSI_ACK_<n>` (`MSI_ACK_0`: a plain acknowledgement) and its responses in the data
/// (`ack_responses`, for Android's notification actions). Each category's actions are, in order, the responses'
/// (`responseAction(_:)`), or `acknowledgeAction` for a plain one. The app registers the categories once
/// (`register(acknowledgeTitle:)` on Apple platforms; an Android app builds its notification's actions with
/// `actions(for:)`) and hands a tapped action to `MSIClient.handleAction(identifier:payload:)`, which posts the
/// acknowledgement without opening the app.
///
/// iOS shows a category's action titles as registered: `register` names them by number ("1", "2", ...); an app
/// with a notification content extension sets the message's own titles there from `actions(for:)`.
public enum AckActions {
    /// The most responses a request offers (the hub's limit): categories `MSI_ACK_0` to `MSI_ACK_10`.
    public static let maximumResponses = 10
    /// The action of a plain acknowledgement (no responses offered).
    public static let acknowledgeAction = "MSI_ACK_OK"

    /// The category of a request with `responses` answers, as the hub names it.
    public static func category(responses: Int) -> String { "MSI_ACK_\(responses)" }

    /// The action of response `index` (from 0) of a request.
    public static func responseAction(_ index: Int) -> String { "MSI_ACK_RESPONSE_\(index)" }

    /// Every category and its actions' identifiers, in order.
    public static var categories: [(identifier: String, actions: [String])] {
        (0...maximumResponses).map { count in
            (category(responses: count), count == 0 ? [acknowledgeAction] : (0..<count).map(responseAction))
        }
    }

    /// The actions of a push (its data): the identifier and the title of each, the responses' in order, or one
    /// plain acknowledgement (titled `acknowledgeTitle`); empty for a push that asks for no acknowledgement.
    public static func actions(for payload: [String: String], acknowledgeTitle: String = "OK")
        -> [(identifier: String, title: String)]
    {
        guard payload["ack"] == "1" else { return [] }
        let responses = payload["ack_responses"].flatMap(PushPayload.responses(json:)) ?? []
        guard !responses.isEmpty else { return [(acknowledgeAction, acknowledgeTitle)] }
        return responses.prefix(maximumResponses).enumerated().map { (responseAction($0.offset), $0.element) }
    }

    /// What an action answers: nil for an action that is not an acknowledgement's; `.some(nil)` for a plain
    /// acknowledgement; the response's index otherwise.
    static func responseIndex(of identifier: String) -> Int?? {
        if identifier == acknowledgeAction { return .some(nil) }
        let prefix = "MSI_ACK_RESPONSE_"
        guard identifier.hasPrefix(prefix), let index = Int(identifier.dropFirst(prefix.count)),
            (0..<maximumResponses).contains(index)
        else { return nil }
        return .some(index)
    }

    #if canImport(UserNotifications) && !os(Linux)
        /// Registers every category with the notification centre, its actions titled by number (a plain one
        /// `acknowledgeTitle`), run without opening the app; keeps the app's other categories.
        public static func register(acknowledgeTitle: String = "OK") async {
            let center = UNUserNotificationCenter.current()
            var all = await center.notificationCategories().filter { !$0.identifier.hasPrefix("MSI_ACK_") }
            for (identifier, actions) in categories {
                let made = actions.enumerated().map { index, action in
                    UNNotificationAction(
                        identifier: action, title: action == acknowledgeAction ? acknowledgeTitle : "\(index + 1)",
                        options: [])
                }
                all.insert(UNNotificationCategory(identifier: identifier, actions: made, intentIdentifiers: []))
            }
            center.setNotificationCategories(all)
        }
    #endif
}
