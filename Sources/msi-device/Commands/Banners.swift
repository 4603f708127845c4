import ArgumentParser
import Foundation
import MSIKit

/// Prints the banners an app would show at launch.
struct Banners: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the live banners (downtime, greeting, not dismissible), newest first: msi_key, KIND, [lang], "
            + "title: desc; then image=<url>, fixed when it may not be dismissed, and until=<time> when it expires.")

    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        let banners = try await reporting { try await client.activeBroadcasts() }
        let time = ISO8601DateFormatter()
        time.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for banner in banners {
            var line = "\(banner.msiKey) \(banner.kind.uppercased())"
            if let language = banner.language { line += " [\(language)]" }
            line += " \(banner.title): \(banner.desc)"
            if let image = banner.image { line += " image=\(image.absoluteString)" }
            if !banner.dismissible { line += " fixed" }
            if let expiry = banner.expiresAt { line += " until=\(time.string(from: expiry))" }
            Output.line(line)
        }
    }
}
