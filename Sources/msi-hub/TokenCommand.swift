import ArgumentParser
import DAO
import Foundation
import HubCore
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
        @Option(help: "admin or communicator.") var role: Role = .communicator
        @Flag(help: "The token may send to persons directly (the right `direct`).") var direct = false
        @Option(help: "The user the token acts for: the approval rule takes its messages as this user's.")
        var owner: String?

        func run() async throws {
            if let problem = AccountService.nameProblem(name) { throw ValidationError(problem) }
            let secret = try await database.withServices {
                try await $0.accounts.createToken(name: name, role: role, direct: direct, owner: owner)
            }
            print(secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets).")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let tokens = try await database.withServices { try await $0.accounts.tokens() }
            for token in tokens {
                let state = token.revokedAt == nil ? "live" : "revoked"
                let used =
                    token.lastUsedAt.map { "last used \(Date(timeIntervalSince1970: Double($0) / 1000))" }
                    ?? "never used"
                let rights = token.direct ? "\tdirect" : ""
                print("\(token.id.hex)\t\(token.name)\t\(token.role.rawValue)\t\(state)\t\(used)\(rights)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a token by name or id; it stops working at once.")
        @OptionGroup var database: DatabaseOptions
        @Argument var nameOrID: String

        func run() async throws {
            try await database.withServices { try await $0.accounts.revokeToken(nameOrID) }
            print("revoked \(nameOrID)")
        }
    }
}
