import ArgumentParser

/// A simulated phone: MSIKit with pushes taken from the fake FCM's inbox instead of Firebase.
@main
struct MSIDevice: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "msi-device",
        abstract: "A simulated phone on MSIKit that receives its pushes from the fake FCM.",
        subcommands: [
            Register.self, Subscriptions.self, Subscribe.self, Unsubscribe.self, Bind.self, Unbind.self,
            Messages.self, Run.self, Ack.self, Flags.self, Banners.self, Post.self, Leave.self, Mute.self, Read.self,
            Unread.self, Settings.self, DigestCommand.self,
        ]
    )
}
