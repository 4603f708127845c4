import ArgumentParser
import Foundation
import MSIKit

/// The folder of a simulated phone's state, shared by every command.
struct StateOption: ParsableArguments {
    @Option(name: .customLong("state"), help: "The folder of the simulated phone's state.")
    var path: String = ".msi-device"

    var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The client of the phone `register` saved in this folder.
    func client() async throws -> MSIClient {
        try await reporting { try DeviceSettings.load(from: url).client(state: url) }
    }
}
