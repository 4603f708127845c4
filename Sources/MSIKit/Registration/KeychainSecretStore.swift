#if canImport(Security)
    import Foundation
    import Security

    /// The device's secret in the Keychain: a generic password of the service "msi-hub", its account the hub's URL and
    /// the device's id, readable after the first unlock and never leaving this device (not in backups, not restored on
    /// another phone: there the app registers anew).
    struct KeychainSecretStore: DeviceSecretStore {
        /// The Keychain service of every MSIKit secret.
        static let service = "msi-hub"

        func secret(for account: String) throws(MSIKitError) -> String? {
            var query = Self.item(account)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = result as? Data, let secret = String(data: data, encoding: .utf8)
            else {
                throw Self.failure("read", status)
            }
            return secret
        }

        func save(_ secret: String, for account: String) throws(MSIKitError) {
            let attributes: [String: Any] = [
                kSecValueData as String: Data(secret.utf8),
                kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            ]
            var status = SecItemUpdate(Self.item(account) as CFDictionary, attributes as CFDictionary)
            if status == errSecItemNotFound {
                status = SecItemAdd(Self.item(account).merging(attributes) { _, new in new } as CFDictionary, nil)
            }
            guard status == errSecSuccess else { throw Self.failure("saved", status) }
        }

        func remove(for account: String) throws(MSIKitError) {
            let status = SecItemDelete(Self.item(account) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw Self.failure("removed", status) }
        }

        /// The attributes that name the account's item.
        private static func item(_ account: String) -> [String: Any] {
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
        }

        private static func failure(_ what: String, _ status: OSStatus) -> MSIKitError {
            MSIKitError(.database, "The device secret could not be \(what) in the Keychain (OSStatus \(status)).")
        }
    }
#endif
