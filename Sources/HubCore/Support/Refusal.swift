/// Why a service refused a request: a code each adapter (REST route, portal page, command line) maps once, and
/// a sentence for a person. The services' refusals (`AccountRefusal`, `DeviceRefusal`) are this type over their own
/// codes; `SendRefusal` is its own type, which also names the field at fault.
public struct Refusal<Code: Hashable & Sendable & CustomStringConvertible>: Error, Sendable, CustomStringConvertible {
    public let code: Code
    /// A sentence for a person; never quotes a secret or a registration token.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "Refusal.\(code): \(message)" }
}
