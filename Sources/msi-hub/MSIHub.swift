import HubServer

/// The `msi-hub` command: see `HubCommand`.
@main
enum MSIHub {
    static func main() async {
        await HubCommand.runMain()
    }
}
