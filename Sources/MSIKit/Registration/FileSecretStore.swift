import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The device's secret in `msikit.device-secret` beside the database, readable and writable by its owner only
/// (mode 0600 from its creation): where there is no Keychain (Linux, the simulated phone).
///
/// The file holds one account and its secret: the library registers one device at a time.
struct FileSecretStore: DeviceSecretStore {
    /// The file's path.
    let path: String

    /// The store in `directory` (the folder of `msikit.sqlite`).
    init(directory: URL) {
        path = directory.appendingPathComponent("msikit.device-secret").path
    }

    /// What the file holds.
    private struct Content: Codable {
        var account: String
        var secret: String
    }

    func secret(for account: String) throws(MSIKitError) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let content: Content
        do {
            content = try JSONDecoder().decode(Content.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw MSIKitError(.database, "The device secret's file could not be read.", underlying: error)
        }
        return content.account == account ? content.secret : nil
    }

    /// Writes a new file created with mode 0600 and renames it over the old one, so the secret is never in a file
    /// others may read, nor half written.
    func save(_ secret: String, for account: String) throws(MSIKitError) {
        let data: Data
        do {
            data = try JSONEncoder().encode(Content(account: account, secret: secret))
        } catch {
            throw MSIKitError(.invalidArgument, "The device secret could not be encoded.", underlying: error)
        }
        let temporary = path + ".\(UUID().uuidString).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw Self.failure("created") }
        // The umask may only have taken bits away; fchmod makes the mode exactly 0600 before any byte is written.
        var written = fchmod(descriptor, 0o600) == 0 && Self.writeAll(data, to: descriptor) && fsync(descriptor) == 0
        written = close(descriptor) == 0 && written
        guard written, rename(temporary, path) == 0 else {
            let error = Self.failure("written")
            unlink(temporary)
            throw error
        }
    }

    func remove(for account: String) throws(MSIKitError) {
        guard try secret(for: account) != nil else { return }
        guard unlink(path) == 0 || errno == ENOENT else { throw Self.failure("removed") }
    }

    /// Writes all of `data`, again after an interruption; false on an error.
    private static func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
        data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return true }
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, base + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += count
            }
            return true
        }
    }

    /// An error naming what could not be done to the file, with the system's reason.
    private static func failure(_ what: String) -> MSIKitError {
        let reason = String(cString: strerror(errno))
        return MSIKitError(.database, "The device secret's file could not be \(what): \(reason).")
    }
}
