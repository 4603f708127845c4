import ArgumentParser
import DAO
import Foundation
import HubCore

/// `msi-hub user add|list|disable|enable|passwd|role|unlock`: portal and API users, through `AccountService` (the
/// portal's own rules and consequences: a new password, role or a disable ends the user's portal sessions).
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Manage users (passwords are read from standard input, never from arguments).",
        subcommands: [Add.self, List.self, Disable.self, Enable.self, Passwd.self, SetRole.self, Unlock.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user; the password is read from standard input.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "admin or communicator.") var role: Role = .communicator
        @Flag(help: "The user may send to persons directly (the right `direct`).") var direct = false

        func run() async throws {
            if let problem = AccountService.nameProblem(username) { throw ValidationError(problem) }
            let password = try PasswordInput.read(prompt: "Password for \(username): ")
            _ = try await database.withServices {
                try await $0.accounts.addUser(username, role: role, password: password, direct: direct)
            }
            print("added \(role.rawValue) \(username)\(direct ? " who may send to persons directly" : "")")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let users = try await database.withServices { try await $0.accounts.users() }
            for user in users {
                let rights = user.direct ? "\tdirect" : ""
                print("\(user.username)\t\(user.role.rawValue)\t\(user.disabled ? "disabled" : "active")\(rights)")
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a user: they can no longer log in, and are logged out.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String

        func run() async throws {
            try await database.withServices { try await $0.accounts.setDisabled(username, true) }
            print("disabled \(username)")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled user again.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String

        func run() async throws {
            try await database.withServices { try await $0.accounts.setDisabled(username, false) }
            print("enabled \(username)")
        }
    }

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a user's password, read from standard input; their portal sessions end.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String

        func run() async throws {
            let password = try PasswordInput.read(prompt: "New password for \(username): ")
            _ = try await database.withServices { try await $0.accounts.resetPassword(of: username, to: password) }
            print("changed the password of \(username)")
        }
    }

    struct SetRole: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "role",
            abstract:
                "Change a user's role (admin or communicator); their portal sessions end. --direct or --no-direct "
                + "also gives or takes the right to send to persons directly.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String
        @Argument(help: "admin or communicator.") var role: Role
        @Flag(inversion: .prefixedNo, help: "Whether the user may send to persons directly (unchanged when absent).")
        var direct: Bool?

        func run() async throws {
            try await database.withServices { services in
                try await services.accounts.setRole(of: username, to: role)
                if let direct { try await services.accounts.setDirect(of: username, to: direct) }
            }
            let rights = direct.map {
                $0 ? " and may send to persons directly" : " and may not send to persons directly"
            }
            print("\(username) is now \(role.rawValue)\(rights ?? "")")
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget a user's failed logins, from every address, so the login throttle lets them in at once.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String

        func run() async throws {
            try await database.withServices { try await $0.accounts.unlock(username) }
            print("unlocked \(username)")
        }
    }
}

extension Role: ExpressibleByArgument {}

/// Reading a password from standard input: one line, without echo on a terminal.
enum PasswordInput {
    static func read(prompt: String) throws -> String {
        let password: String?
        if isatty(STDIN_FILENO) != 0 {
            password = getpass(prompt).map { String(cString: $0) }
        } else {
            password = readLine(strippingNewline: true)
        }
        guard let password else { throw ValidationError("a password is needed on standard input") }
        // The account service's rule, checked before the database is opened.
        if let problem = AccountService.passwordProblem(password) { throw ValidationError(problem) }
        return password
    }
}
