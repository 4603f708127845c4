import DAO
import Foundation
import HubServer
import Hummingbird
import HummingbirdTesting
@testable import Migration
import Mongo
import MongoTestSupport
import Testing

/// The real GET /channel of a hub started on the imported database gives the legacy output's content.
@Suite struct ChannelRouteTests {
    @Test func getChannelAfterImportHoldsTheLegacyContentOfEveryChannel() async throws {
        try await TestDatabase.with { database in
            let report = try await Migrator(target: database, options: .quiet())
                .importFiles(icube: LegacyFixtures.icubeLines, messages: nil)
            #expect(report.verification?.passed == true)
            let configuration = HubConfiguration(mongoURI: try TestDatabase.uri(), port: 0, databasePoolSize: 2)
            let app = try await buildApplication(configuration: configuration, databaseName: database.name)
            try await app.test(.live) { client in
                let response = try await client.execute(uri: "/channel", method: .get)
                #expect(response.status == .ok)
                let channels = try JSONParser().value(from: response.body.readableBytesView).arrayValue ?? []
                let served = channels.compactMap(\.documentValue)
                #expect(served.count == 4)
                let verification = ChannelVerifier().verify(
                    sources: try LegacyFixtures.legacyChannels(),
                    targets: served)
                #expect(verification.passed, "\(verification.mismatches) \(verification.missing)")
                #expect(verification.matching == 4)
            }
        }
    }

    @Test func theVerifierCatchesALostFieldAndAChangedValue() throws {
        let legacy = try LegacyFixtures.legacyChannels()
        var targets = try LegacyFixtures.expectedChannels()
        targets[0]["created_by"] = nil
        targets[1]["name"] = "Another name"
        let verification = ChannelVerifier().verify(sources: legacy, targets: targets)
        #expect(verification.matching == 2)
        #expect(verification.mismatches.count == 2)
        #expect(verification.mismatches.contains { $0.hasSuffix("created_by") })
        #expect(verification.mismatches.contains { $0.hasSuffix("name") })
        let missing = ChannelVerifier().verify(sources: legacy, targets: Array(targets.dropLast()))
        #expect(missing.missing.count == 1)
    }
}
