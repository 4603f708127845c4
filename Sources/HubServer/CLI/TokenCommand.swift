import ArgumentParser
import DAO
import Foundation
import Mongo

/// `msi-hub token create|list|revoke`: API tokens for scripts.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Manage API tokens.", subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a token and print it alone on standard output (it is shown only this once).")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The token's name: messages sent with it carry it as their sender.") var name: String
        @Option(help: "admin or communicator.") var role: String = Role.communicator.rawValue

        func run() async throws {
            guard let role = Role(rawValue: role) else { throw ValidationError("role must be admin or communicator") }
            try UserCommand.validate(username: name)
            let (secret, hash) = Credentials.newToken()
            try await database.withServices { _ = try await $0.tokens.add(name: name, role: role, secretHash: hash) }
            print(secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets).")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let tokens = try await database.withServices { try await $0.tokens.list() }
            for token in tokens {
                let state = token.revokedAt == nil ? "live" : "revoked"
                let used = token.lastUsedAt.map { "last used \(Date(timeIntervalSince1970: Double($0) / 1000))" } ?? "never used"
                print("\(token.id.hex)\t\(token.name)\t\(token.role.rawValue)\t\(state)\t\(used)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token by name or id; it stops working at once.")
        @OptionGroup var database: DatabaseOptions
        @Argument var nameOrID: String

        func run() async throws {
            try await database.withServices { try await $0.tokens.revoke(nameOrID: nameOrID) }
            print("revoked \(nameOrID)")
        }
    }
}
