import Curl
import DAO
import Foundation
import HubCore
import OIDC

/// Staff sign-in through the school's OpenID provider (`OIDC_*`): the provider and the hub as its client, who may
/// enter with which role and access, whether passwords still work (`OIDC_ONLY`) and whether the login page goes
/// straight to the provider (`OIDC_AUTO_REDIRECT`). Nil in `HubConfiguration` when `OIDC_ISSUER` is unset.
public struct StaffSignInConfiguration: Sendable, Equatable {
    public var settings: OIDCSettings
    public var rules: StaffDirectoryRules
    /// Refuses password logins and HTTP Basic for users (API tokens keep working), and hides the login form.
    public var only: Bool
    /// The login page sends the browser straight to the provider.
    public var autoRedirect: Bool
    /// The callback URL as registered at the provider (`OIDC_REDIRECT_URL`); nil: made from the request's scheme
    /// and host, `/portal/login/oidc/callback`.
    public var redirectURL: String?

    public init(
        settings: OIDCSettings, rules: StaffDirectoryRules, only: Bool = false, autoRedirect: Bool = false,
        redirectURL: String? = nil
    ) {
        self.settings = settings
        self.rules = rules
        self.only = only
        self.autoRedirect = autoRedirect
        self.redirectURL = redirectURL
    }

    /// The staff sign-in the environment gives, or nil without `OIDC_ISSUER`.
    /// - Throws: `ConfigurationError` naming the variable: an issuer that is not https (but loopback), no client
    ///   id, no admin or communicator group, an access map that cannot be read or names no channel or area, a flag
    ///   that is neither true nor false, `OIDC_ONLY` without an issuer.
    static func fromEnvironment(_ environment: [String: String]) throws -> StaffSignInConfiguration? {
        /// Unset and empty are the same: compose files pass every variable, empty when not given.
        func value(_ text: String?) -> String? {
            text.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        }
        let only = try flag("OIDC_ONLY", value(environment["OIDC_ONLY"]))
        let autoRedirect = try flag("OIDC_AUTO_REDIRECT", value(environment["OIDC_AUTO_REDIRECT"]))
        guard let issuer = value(environment["OIDC_ISSUER"]) else {
            if only || autoRedirect {
                throw ConfigurationError("OIDC_ONLY and OIDC_AUTO_REDIRECT need OIDC_ISSUER (staff sign-in)")
            }
            return nil
        }
        do {
            try EndpointRule.check(issuer, name: "issuer")
        } catch {
            throw ConfigurationError(
                "OIDC_ISSUER must be an https URL (plain http only to this machine), not \"\(issuer)\"")
        }
        guard let clientID = value(environment["OIDC_CLIENT_ID"]) else {
            throw ConfigurationError("OIDC_CLIENT_ID must be set with OIDC_ISSUER")
        }
        var settings = OIDCSettings(
            issuer: issuer, clientID: clientID, clientSecret: value(environment["OIDC_CLIENT_SECRET"]),
            displayName: value(environment["OIDC_DISPLAY_NAME"]) ?? "your school account")
        if let scopes = value(environment["OIDC_SCOPES"]) {
            settings = OIDCSettings(
                issuer: issuer, clientID: clientID, clientSecret: settings.clientSecret,
                scopes: scopes.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init),
                displayName: settings.displayName)
        }
        var rules = StaffDirectoryRules()
        if let claim = value(environment["OIDC_USERNAME_CLAIM"]) {
            rules.usernameClaim = try Self.claimName(claim, "OIDC_USERNAME_CLAIM")
        }
        if let claim = value(environment["OIDC_ROLE_CLAIM"]) {
            rules.roleClaim = try Self.claimName(claim, "OIDC_ROLE_CLAIM")
        }
        rules.adminGroups = Self.groups(value(environment["OIDC_ADMIN_GROUPS"]))
        rules.communicatorGroups = Self.groups(value(environment["OIDC_COMMUNICATOR_GROUPS"]))
        guard !rules.adminGroups.isEmpty || !rules.communicatorGroups.isEmpty else {
            throw ConfigurationError(
                "OIDC_ADMIN_GROUPS or OIDC_COMMUNICATOR_GROUPS must name at least one group: without, nobody may enter")
        }
        if let path = value(environment["OIDC_ACCESS_MAP"]) { rules.accessMap = try Self.accessMap(path: path) }
        var redirectURL: String?
        if let url = value(environment["OIDC_REDIRECT_URL"]) {
            guard let parts = URLComponents(string: url), ["http", "https"].contains(parts.scheme ?? ""),
                parts.host != nil, parts.path.hasSuffix("/portal/login/oidc/callback")
            else {
                throw ConfigurationError(
                    "OIDC_REDIRECT_URL must be the hub's https URL ending in /portal/login/oidc/callback")
            }
            redirectURL = url
        }
        return StaffSignInConfiguration(
            settings: settings, rules: rules, only: only, autoRedirect: autoRedirect, redirectURL: redirectURL)
    }

    private static func flag(_ name: String, _ text: String?) throws -> Bool {
        switch text?.lowercased() {
        case nil, "0", "false", "no": return false
        case "1", "true", "yes": return true
        default: throw ConfigurationError("\(name) must be true or false, not \"\(text ?? "")\"")
        }
    }

    private static func claimName(_ claim: String, _ variable: String) throws -> String {
        guard claim.utf8.count <= 64, claim.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") })
        else {
            throw ConfigurationError("\(variable) must be a claim name (up to 64 visible ASCII characters)")
        }
        return claim
    }

    /// A comma-separated list of group names (as the provider writes them in the role claim).
    private static func groups(_ text: String?) -> Set<String> {
        Set((text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    }

    /// Reads `OIDC_ACCESS_MAP`: a JSON object from provider group to the channels and areas its members may send
    /// to, each `<channel id>` or `<channel id>-<area id>`:
    /// `{"staff-sports": ["64b...01"], "staff-library": ["64b...02-64b...03"]}`.
    static func accessMap(path: String) throws -> [String: Set<CubeNode>] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("OIDC_ACCESS_MAP names a file that cannot be read: \(path)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError("OIDC_ACCESS_MAP must be a JSON object from group names to lists of ids")
        }
        var map: [String: Set<CubeNode>] = [:]
        for (group, ids) in object {
            guard let ids = ids as? [String] else {
                throw ConfigurationError("OIDC_ACCESS_MAP: the value of \"\(group)\" must be a list of ids")
            }
            var nodes = Set<CubeNode>()
            for id in ids {
                guard let node = CubeNode(id) else {
                    throw ConfigurationError(
                        "OIDC_ACCESS_MAP: \"\(id)\" (group \"\(group)\") is neither a channel id nor channel-area ids")
                }
                nodes.insert(node)
            }
            map[group] = nodes
        }
        return map
    }
}
