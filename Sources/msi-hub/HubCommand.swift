import ArgumentParser

/// `msi-hub`: the server and its administration commands.
@main
struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "msi-hub",
        abstract: "The Mobile Student Intranet hub: the information cube, the message archive and the FCM relay.",
        subcommands: [
            ServeCommand.self, UserCommand.self, TokenCommand.self, MigrateCommand.self, ImportCommand.self,
            AuditCommand.self, PersonCommand.self,
        ],
        defaultSubcommand: ServeCommand.self
    )
}
