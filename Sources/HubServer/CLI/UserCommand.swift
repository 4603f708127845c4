import ArgumentParser
import DAO
import Foundation

/// `msi-hub user add|list|disable|enable|passwd|role`: portal and API users.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Manage users (passwords are read from standard input, never from arguments).",
        subcommands: [Add.self, List.self, Disable.self, Enable.self, Passwd.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a user; the password is read from standard input.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "admin or communicator.") var role: String = Role.communicator.rawValue

        func run() async throws {
            guard let role = Role(rawValue: role) else { throw ValidationError("role must be admin or communicator") }
            try UserCommand.validate(username: username)
            let password = try PasswordInput.read(prompt: "Password for \(username): ")
            try await database.withServices { services in
                let hash = try await services.credentials.hash(password: password)
                _ = try await services.users.add(username: username, passwordHash: hash, role: role)
            }
            print("added \(role.rawValue) \(username)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let users = try await database.withServices { try await $0.users.list() }
            for user in users {
                print("\(user.username)\t\(user.role.rawValue)\t\(user.disabled ? "disabled" : "active")")
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable a user: they can no longer log in.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String

        func run() async throws {
            try await database.withServices { try await $0.users.setDisabled(username: username, true) }
            print("disabled \(username)")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled user again.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String

        func run() async throws {
            try await database.withServices { try await $0.users.setDisabled(username: username, false) }
            print("enabled \(username)")
        }
    }

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set a user's password, read from standard input.")
        @OptionGroup var database: DatabaseOptions
        @Argument var username: String

        func run() async throws {
            let password = try PasswordInput.read(prompt: "New password for \(username): ")
            try await database.withServices { services in
                let hash = try await services.credentials.hash(password: password)
                try await services.users.setPasswordHash(username: username, hash)
            }
            print("changed the password of \(username)")
        }
    }

    /// Usernames are what `access` lists and message senders hold: short and printable.
    static func validate(username: String) throws {
        guard (1...64).contains(username.count), username.allSatisfy({ $0.isLetter || $0.isNumber || "._-@".contains($0) }) else {
            throw ValidationError("a username is 1 to 64 letters, digits, '.', '_', '-' or '@'")
        }
    }
}

/// Reading a password from standard input: one line, without echo on a terminal.
enum PasswordInput {
    static func read(prompt: String) throws -> String {
        let password: String?
        if isatty(STDIN_FILENO) != 0 {
            password = getpass(prompt).map { String(cString: $0) }
        } else {
            password = readLine(strippingNewline: true)
        }
        guard let password, password.count >= 8 else {
            throw ValidationError("a password of at least 8 characters is needed on standard input")
        }
        return password
    }
}
