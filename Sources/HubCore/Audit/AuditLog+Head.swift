import DAO
import Logging

extension AuditLog {
    /// Logs the head of the chain (`audit head seq=N hash=H`) now and every `interval` until cancelled, so that
    /// entries cut off the end of the log are caught against the log lines (`msi-hub audit verify` prints the head).
    public func logHeadLoop(every interval: Duration = .seconds(3600)) async {
        while !Task.isCancelled {
            do {
                let head = try await entries.head()
                logger.info("audit head seq=\(head?.seq ?? 0) hash=\(head?.hash ?? AuditEntry.genesis)")
            } catch {
                logger.warning("the audit log's head could not be read", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
