import DAO
import Mongo

/// Who sees the cube's `access` lists (the usernames that may send to a channel, area or subject): admins only.
/// Everyone else (communicators, devices, anonymous callers) reads the cube with every `access` list empty, the legacy
/// shape otherwise kept: the names of the school's senders are no one else's to list.
public enum CubeVisibility {
    /// Whether `identity` sees the access lists (nil: an anonymous caller or a device).
    public static func showsAccessLists(to identity: Identity?) -> Bool {
        identity?.role == .admin
    }

    /// `channel`, an icube document, with its own `access` list and those of its areas and subjects emptied where
    /// they are present; every other field as stored, in its order.
    public static func redacted(_ channel: BSONDocument) -> BSONDocument {
        var channel = emptyingAccess(channel)
        guard let areas = channel["areas"]?.arrayValue else { return channel }
        channel["areas"] = .array(
            areas.map { value in
                guard var area = value.documentValue.map(emptyingAccess) else { return value }
                if let subjects = area["subjects"]?.arrayValue {
                    area["subjects"] = .array(
                        subjects.map { $0.documentValue.map { .document(emptyingAccess($0)) } ?? $0 })
                }
                return .document(area)
            })
        return channel
    }

    /// `document` with its `access`, when it has one, an empty list.
    private static func emptyingAccess(_ document: BSONDocument) -> BSONDocument {
        guard document.contains("access") else { return document }
        var document = document
        document["access"] = .array([])
        return document
    }
}
