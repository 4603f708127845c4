import FakeFCM
import Foundation

// `fake-fcm --port 0 --state-dir DIR`: runs the fake FCM until killed, for tests that start `msi-hub serve`.
// Prints one JSON line: {"port": .., "base_url": .., "credentials": DIR/service-account.json}.
// `GET /_received` answers the bodies of the accepted messages:send requests; `GET /_inbox/{registration}`
// hands a simulated phone its delivered messages (and forgets them); `GET /_subscriptions/{registration}` lists
// its topics. FCM's topic subscription API is served under /v1/projects/{project}/registrations/.
var arguments = ArraySlice(CommandLine.arguments.dropFirst())
var port = 0
var stateDirectory = FileManager.default.temporaryDirectory.path
while let argument = arguments.popFirst() {
    switch argument {
    case "--port": port = arguments.popFirst().flatMap { Int($0) } ?? 0
    case "--state-dir": stateDirectory = arguments.popFirst() ?? stateDirectory
    default:
        FileHandle.standardError.write(Data("usage: fake-fcm [--port N] [--state-dir DIR]\n".utf8))
        exit(2)
    }
}
let fake = try await FakeFCM.start(port: port)
var account = try fake.makeServiceAccount()
account.remove()
try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
account.path = URL(fileURLWithPath: stateDirectory).appendingPathComponent("service-account.json").path
try account.write()
let line: [String: Any] = ["port": fake.port, "base_url": fake.baseURL, "credentials": account.path]
let json = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
FileHandle.standardOutput.write(json + Data("\n".utf8))
while true { try await Task.sleep(for: .seconds(3600)) }
