import DAO
import HubCore
import Hummingbird
import HummingbirdCore
import Mongo

/// The subjects a user may send to, with the channel and area above each: what the send form offers and the
/// sent list filters by.
struct SendTargets {
    struct Target {
        var channel: Channel
        var area: Area
        var subject: Subject
    }

    /// A choice of channel, area and subject by id (hex); empty strings where nothing is chosen.
    struct Selection {
        var channel = ""
        var area = ""
        var subject = ""

        /// The selection a page's `channel`, `area` and `subject` query parameters name.
        init(query: FlatDictionary<Substring, Substring>) {
            self.init(
                channel: query.get("channel") ?? "", area: query.get("area") ?? "", subject: query.get("subject") ?? "")
        }

        /// A selection from a query or form: anything but an ObjectId in hex is no choice.
        init(channel: String = "", area: String = "", subject: String = "") {
            func id(_ text: String) -> String { ObjectID(hex: text) == nil ? "" : text.lowercased() }
            self.channel = id(channel)
            self.area = id(area)
            self.subject = id(subject)
        }
    }

    let targets: [Target]

    /// The subjects of `channels` that `identity` may send to (subjects without a valid distribution cannot
    /// be sent to by anyone).
    init(channels: [Channel], identity: Identity) {
        var targets: [Target] = []
        for channel in channels {
            for area in channel.areas {
                for subject in area.subjects
                where subject.distribution != nil
                    && identity.maySend(through: [channel.access, area.access, subject.access])
                {
                    targets.append(Target(channel: channel, area: area, subject: subject))
                }
            }
        }
        self.targets = targets
    }

    /// The target chosen, when all three ids name one this user may send to.
    func target(_ selection: Selection) -> Target? {
        targets.first {
            $0.channel.id.hex == selection.channel && $0.area.id.hex == selection.area
                && $0.subject.id.hex == selection.subject
        }
    }

    /// The topic keys under a selection: one subject, an area's or a channel's subjects; nil when nothing is chosen.
    func topicKeys(_ selection: Selection) -> [String]? {
        guard !selection.channel.isEmpty else { return nil }
        return targets.filter {
            $0.channel.id.hex == selection.channel
                && (selection.area.isEmpty || $0.area.id.hex == selection.area)
                && (selection.subject.isEmpty || $0.subject.id.hex == selection.subject)
        }.map(\.subject.topicKey)
    }

    /// The three lists of the cascading selects: every channel, area and subject with a target, each area
    /// and subject naming its parents (the script shows only those under the chosen parent).
    /// - Parameter audience: devices per topic key (`DeviceService.audienceSizes`); empty when unknown.
    func selectData(_ selection: Selection, audience: [String: Int] = [:]) -> [String: Any] {
        var channels: [[String: Any]] = [], areas: [[String: Any]] = [], subjects: [[String: Any]] = []
        var seenChannels: Set<ObjectID> = [], seenAreas: Set<String> = []
        for target in targets {
            let channelID = target.channel.id.hex, areaID = target.area.id.hex, subjectID = target.subject.id.hex
            if seenChannels.insert(target.channel.id).inserted {
                channels.append([
                    "id": channelID, "name": target.channel.name, "selected": channelID == selection.channel,
                ])
            }
            if seenAreas.insert(channelID + areaID).inserted {
                areas.append([
                    "id": areaID, "name": target.area.name, "channel": channelID,
                    "selected": channelID == selection.channel && areaID == selection.area,
                ])
            }
            let distribution = target.subject.distribution?.rawValue ?? ""
            subjects.append([
                "id": subjectID, "name": target.subject.name, "channel": channelID, "area": areaID,
                "topicKey": target.subject.topicKey,
                "distribution": distribution, "level": Self.levelText(target.subject.level),
                "reach": Self.reachText(audience[target.subject.topicKey] ?? 0),
                "selected": channelID == selection.channel && areaID == selection.area
                    && subjectID == selection.subject,
            ])
        }
        var data: [String: Any] = ["channels": channels, "areas": areas, "subjects": subjects]
        if let target = target(selection) {
            data["chosen"] = [
                "distribution": target.subject.distribution?.rawValue ?? "",
                "level": Self.levelText(target.subject.level),
                "isAlert": target.subject.distribution == .alert,
                "reach": Self.reachText(audience[target.subject.topicKey] ?? 0),
            ]
        }
        return data
    }

    /// How many registered devices a message reaches, for people (apps that subscribe themselves are not counted).
    static func reachText(_ devices: Int) -> String {
        devices == 1 ? "1 registered device" : "\(devices) registered devices"
    }

    /// A subject's `opt.level` for people ("" is the optional level).
    static func levelText(_ level: String) -> String {
        switch level {
        case SubscriptionLevel.forced.rawValue: "Forced (every phone, cannot unsubscribe)"
        case SubscriptionLevel.recommended.rawValue: "Recommended (every phone, may unsubscribe)"
        case SubscriptionLevel.optional.rawValue: "Optional (phones that subscribe)"
        default: level
        }
    }
}
