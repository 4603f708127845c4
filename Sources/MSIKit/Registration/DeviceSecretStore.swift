import Foundation

/// Where the device's secret is kept: apart from `msikit.sqlite`, which backups and copies of the app's folder carry
/// along. The Keychain on Apple platforms (`KeychainSecretStore`), a file only its owner may read elsewhere
/// (`FileSecretStore`), memory when the library keeps nothing on disk.
///
/// An account names one device of one hub: the hub's base URL, "/device/", the device's id.
protocol DeviceSecretStore: Sendable {
    /// The secret saved for `account`, if any.
    /// - Throws: `.database` when the store cannot be read.
    func secret(for account: String) throws(MSIKitError) -> String?

    /// Saves `secret` for `account`, replacing one saved before.
    /// - Throws: `.database` when the store cannot be written.
    func save(_ secret: String, for account: String) throws(MSIKitError)

    /// Forgets the secret of `account`; nothing when none is saved.
    /// - Throws: `.database` when the store cannot be written.
    func remove(for account: String) throws(MSIKitError)
}

/// The store a client uses: memory without a folder, else the Keychain on Apple platforms and a file beside the
/// database elsewhere.
func defaultSecretStore(directory: URL?) -> any DeviceSecretStore {
    #if canImport(Security)
        directory == nil ? MemorySecretStore() : KeychainSecretStore()
    #else
        directory.map { FileSecretStore(directory: $0) } ?? MemorySecretStore()
    #endif
}

/// Secrets kept in memory only: a client without a folder (tests, previews).
final class MemorySecretStore: DeviceSecretStore, @unchecked Sendable {
    // @unchecked: `secrets` is read and written only under `lock` (Mutex needs iOS 18).
    private let lock = NSLock()
    private var secrets: [String: String] = [:]

    func secret(for account: String) throws(MSIKitError) -> String? {
        lock.withLock { secrets[account] }
    }

    func save(_ secret: String, for account: String) throws(MSIKitError) {
        lock.withLock { secrets[account] = secret }
    }

    func remove(for account: String) throws(MSIKitError) {
        _ = lock.withLock { secrets.removeValue(forKey: account) }
    }
}
