import Foundation

extension MSIClient {
    /// Where the hub is, where the library keeps its files, and what the device tells the hub about itself.
    public struct Configuration: Sendable {
        /// The hub's base URL, for example `https://msi.example.edu`.
        public var hub: URL
        /// The folder of the library's files (`msikit.sqlite`, the cube's last copy); nil keeps everything in
        /// memory (for tests). Created if missing.
        public var directory: URL?
        /// The kind of device, sent when registering.
        public var platform: Platform
        /// The user's locale (for example "en-GB"), sent when registering, if known.
        public var locale: String?
        /// The app's version, sent when registering, if known.
        public var appVersion: String?
        /// The hub's registration key (`X-App-Key`), if the hub requires one.
        public var appKey: String?
        /// The time zone whose days `clearOldMessages()` counts.
        public var timeZone: TimeZone
        /// The clock `clearOldMessages()` reads.
        public var clock: @Sendable () -> Date

        /// Creates a configuration; only the hub and the folder have no default.
        public init(
            hub: URL, directory: URL?, platform: Platform = .ios, locale: String? = nil, appVersion: String? = nil,
            appKey: String? = nil, timeZone: TimeZone = .current, clock: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.hub = hub
            self.directory = directory
            self.platform = platform
            self.locale = locale
            self.appVersion = appVersion
            self.appKey = appKey
            self.timeZone = timeZone
            self.clock = clock
        }
    }
}
