import FCM

/// What one call to FCM came to, as the loop that made it acts on it (`OutcomeClassifier` sorts each answer).
enum CallOutcome<Value: Sendable>: Sendable {
    /// FCM took it, and answered `Value`.
    case sent(Value)
    /// FCM could not take it now: try again later, not before `pauseEnd` (Unix ms) when FCM paused the project.
    case retryAfter(FCMError, pauseEnd: Int64?)
    /// FCM refused it for good.
    case failed(FCMError)
    /// The registration token the call named is gone (FCM's `UNREGISTERED`): its device receives no more.
    case unregistered(FCMError)
}
