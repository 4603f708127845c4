import Foundation

/// The parts of a MongoDB connection string that say which database it names.
public struct DatabaseAddress: Sendable, Equatable {
    /// The hosts and ports, lowercased and sorted (`localhost` read as `127.0.0.1`, 27017 when none).
    public var hosts: [String]
    /// The database (the URI's path), `msi` when it names none.
    public var database: String

    /// The address a `mongodb://` or `mongodb+srv://` URI names; credentials and options are dropped.
    public init(uri: String, defaultDatabase: String = "msi") {
        var rest = Substring(uri)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        let authority = rest.prefix(while: { $0 != "/" && $0 != "?" })
        let hostList = authority.split(separator: "@").last ?? ""
        hosts = hostList.split(separator: ",").map { host in
            var host = host.lowercased()
            if !host.contains(":") || host.hasSuffix("]") { host += ":27017" }
            if host.hasPrefix("localhost:") { host = "127.0.0.1" + host.dropFirst("localhost".count) }
            return host
        }.sorted()
        let path = rest.dropFirst(authority.count)
        let name = path.hasPrefix("/") ? path.dropFirst().prefix(while: { $0 != "?" }) : ""
        database = name.isEmpty ? defaultDatabase : String(name)
    }

    /// The URI without credentials or options, for reports and logs.
    public var redacted: String { "mongodb://\(hosts.joined(separator: ","))/\(database)" }

    /// Whether two URIs name the same database on the same servers.
    public func isSameDatabase(as other: DatabaseAddress) -> Bool {
        database == other.database && !Set(hosts).isDisjoint(with: other.hosts)
    }
}
