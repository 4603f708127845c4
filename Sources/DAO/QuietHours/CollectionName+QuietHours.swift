extension CollectionName {
    /// The distinct quiet-hours windows of the devices, with how many devices have each (`QuietWindowDAO`).
    public static let quietWindows = "quiet_windows"
    /// The token sends of topic messages held back for devices in their quiet hours, one document per (message,
    /// device), due when the device's window ends (`QuietDeferralDAO`); registration tokens, never listed.
    public static let quietDeferrals = "quiet_deferrals"
}
