import Foundation
import MSIKit

/// What `register` was told, kept in the state folder's `device.json` for the other commands.
struct DeviceSettings: Codable, Sendable {
    var hub: URL
    var fakeFCM: URL
    var registration: String
    var platform: String
    var appKey: String?
    /// The phone's locale ("hi-IN"): told to the hub, and the language translated messages and banners are shown in.
    var locale: String?

    static func file(in state: URL) -> URL { state.appendingPathComponent("device.json") }

    /// Reads the settings `register` saved.
    static func load(from state: URL) throws -> DeviceSettings {
        let file = file(in: state)
        guard let data = try? Data(contentsOf: file) else {
            throw CommandFailure("No device in \(state.path): run `msi-device register` first.")
        }
        return try JSONDecoder().decode(DeviceSettings.self, from: data)
    }

    /// Saves the settings in the state folder, creating it.
    func save(in state: URL) throws {
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: Self.file(in: state), options: .atomic)
    }

    /// The MSIKit client of this simulated phone, its files in the state folder's `msikit`.
    func client(state: URL) throws -> MSIClient {
        let configuration = MSIClient.Configuration(
            hub: hub, directory: state.appendingPathComponent("msikit"), platform: Platform(rawValue: platform),
            locale: locale, appVersion: "msi-device", appKey: appKey)
        return try MSIClient(
            configuration: configuration, push: FakeFCMPush(fakeFCM: fakeFCM, registration: registration))
    }
}
