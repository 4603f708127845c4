import FakeFCM
import Foundation

// `fake-fcm --port 0 --state-dir DIR [--latency 50ms]`: runs the fake FCM until killed, for tests that start
// `msi-hub serve` and for `make bench`. It speaks HTTP/1.1 and HTTP/2 with prior knowledge (h2c) on the one port;
// `--latency` delays each answer of messages:send and of the subscription calls (`ms` or `s`; Google's round trip).
// Prints one JSON line: {"port": .., "base_url": .., "credentials": DIR/service-account.json}.
// `GET /_received` answers the bodies of the accepted messages:send requests; `GET /_inbox/{registration}`
// hands a simulated phone its delivered messages (and forgets them); `GET /_subscriptions/{registration}` lists
// its topics; `GET /_stats` counts connections and the most sends in flight at once. FCM's topic subscription API
// is served under /v1/projects/{project}/registrations/.
var arguments = ArraySlice(CommandLine.arguments.dropFirst())
var port = 0
var stateDirectory = FileManager.default.temporaryDirectory.path
var latency: Duration?
let usage = "usage: fake-fcm [--port N] [--state-dir DIR] [--latency 50ms]\n"

/// `50ms`, `2s` or a bare number of milliseconds; nil for anything else.
func parseDuration(_ text: String) -> Duration? {
    if text.hasSuffix("ms"), let value = Int(text.dropLast(2)), value >= 0 { return .milliseconds(value) }
    if text.hasSuffix("s"), let value = Double(text.dropLast()), value >= 0 { return .milliseconds(Int(value * 1000)) }
    return Int(text).flatMap { $0 >= 0 ? .milliseconds($0) : nil }
}

while let argument = arguments.popFirst() {
    switch argument {
    case "--port": port = arguments.popFirst().flatMap { Int($0) } ?? 0
    case "--state-dir": stateDirectory = arguments.popFirst() ?? stateDirectory
    case "--latency":
        guard let value = arguments.popFirst().flatMap(parseDuration) else {
            FileHandle.standardError.write(Data(usage.utf8))
            exit(2)
        }
        latency = value == .zero ? nil : value
    default:
        FileHandle.standardError.write(Data(usage.utf8))
        exit(2)
    }
}
let fake = try await FakeFCM.start(latency: latency, port: port)
var account = try fake.makeServiceAccount()
account.remove()
try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
account.path = URL(fileURLWithPath: stateDirectory).appendingPathComponent("service-account.json").path
try account.write()
let line: [String: Any] = ["port": fake.port, "base_url": fake.baseURL, "credentials": account.path]
let json = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
FileHandle.standardOutput.write(json + Data("\n".utf8))
while true { try await Task.sleep(for: .seconds(3600)) }
