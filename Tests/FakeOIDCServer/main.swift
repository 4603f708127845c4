import FakeOIDC
import Foundation

// `fake-oidc --port 0 [--client-id msi-hub] [--client-secret S]`: runs the test OpenID provider until killed, for the
// browser tests and the README's walk. Prints one JSON line: {"port": .., "issuer": ..}. `POST /_user` with
// {"email", "groups"} chooses who the next sign-ins are.
var arguments = ArraySlice(CommandLine.arguments.dropFirst())
var port = 0
var clientID = "msi-hub"
var clientSecret: String? = "test-client-secret"
while let argument = arguments.popFirst() {
    switch argument {
    case "--port": port = arguments.popFirst().flatMap { Int($0) } ?? 0
    case "--client-id": clientID = arguments.popFirst() ?? clientID
    case "--client-secret": clientSecret = arguments.popFirst()
    case "--public": clientSecret = nil
    default:
        FileHandle.standardError.write(
            Data("usage: fake-oidc [--port N] [--client-id ID] [--client-secret S | --public]\n".utf8))
        exit(2)
    }
}
let fake = try await FakeOIDC.start(clientID: clientID, clientSecret: clientSecret, port: port)
let line = try JSONSerialization.data(
    withJSONObject: ["port": fake.port, "issuer": fake.issuer], options: [.sortedKeys])
FileHandle.standardOutput.write(line + Data("\n".utf8))
while true { try await Task.sleep(for: .seconds(3600)) }
