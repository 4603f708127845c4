import Foundation

/// A nonce from the hub for the device's next person assertion (`MSIClient.bindingNonce()`): when the hub runs with
/// `PERSON_ASSERTION_NONCE=required`, the app asks the school's sign-in for an assertion whose `nonce` claim is
/// `value` (the OpenID Connect `nonce` of the sign-in request) and binds with it before `expiresAt`. Single use.
public struct BindingNonce: Sendable, Equatable {
    /// The value the assertion's `nonce` claim carries.
    public let value: String
    /// When the hub stops accepting it (5 minutes after it was given).
    public let expiresAt: Date
}
