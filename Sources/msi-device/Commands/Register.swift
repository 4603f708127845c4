import ArgumentParser
import Foundation
import MSIKit

/// Registers a new simulated phone with the hub and subscribes it to the Forced and Recommended subjects.
struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register with the hub (or resume an interrupted registration) and catch up.")

    @Option(help: "The hub's base URL.")
    var hub: String
    @Option(name: .customLong("fake-fcm"), help: "The fake FCM's base URL, whose inbox the phone polls.")
    var fakeFCM: String
    @OptionGroup var state: StateOption
    @Option(help: "The platform told to the hub: ios, android or web.")
    var platform: String = "android"
    @Option(help: "The FCM registration token (default: a new sim-<UUID>, or the one saved in the state folder).")
    var registration: String?
    @Option(name: .customLong("app-key"), help: "The hub's registration key (X-App-Key), if it requires one.")
    var appKey: String?
    @Option(help: "The phone's locale (hi-IN), told to the hub; translated messages are shown in its language.")
    var locale: String?

    func run() async throws {
        guard let hubURL = URL(string: hub), let fakeFCMURL = URL(string: fakeFCM) else {
            throw ValidationError("--hub and --fake-fcm must be URLs.")
        }
        // Registering again in the same folder resumes with the same token rather than making a second phone.
        let saved = try? DeviceSettings.load(from: state.url)
        let token = registration ?? saved?.registration ?? "sim-\(UUID().uuidString)"
        let settings = DeviceSettings(
            hub: hubURL, fakeFCM: fakeFCMURL, registration: token, platform: platform, appKey: appKey,
            locale: locale ?? saved?.locale)
        try settings.save(in: state.url)
        let client = try await reporting { try settings.client(state: state.url) }
        let caughtUp = try await reporting { try await client.start() }
        let registrationState = try await reporting { try await client.registrationState() }
        switch registrationState {
        case .initialised(let deviceID): Output.line("registered \(deviceID) \(token) initialised")
        case .registered(let deviceID):
            Output.line("registered \(deviceID) \(token) (initial subscriptions unfinished)")
        case .notRegistered: throw CommandFailure("The hub did not register the device.")
        }
        caughtUp.forEach(Output.arrival)
    }
}
