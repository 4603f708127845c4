import FCM

/// The relay's per-device send lane: sends to one device at a time through the worker's gate and pacer
/// (`PacedSends`), mapped as every per-device sender maps them. The outbox worker makes it for its fan-out; the
/// quiet-hours sender and the escalation send through the same one, so that all of a process's per-device sends
/// share one rate and one gate.
public struct DeviceLane: Sendable {
    /// The paced, gated sends.
    let sends: PacedSends
    /// How messages map to FCM requests.
    let mapping: FCMMappingOptions
}
