import DAO
import Foundation
import HubCore

/// Who receives a message sent through the form, besides a subject: a group the user may send to, or persons (ids
/// typed in) for users the recipient policy lets send to persons directly. The form's `to` radio buttons choose the
/// kind; the server reads only the fields of the kind chosen.
struct SendRecipients {
    /// The kinds of recipient, as the values of the form's `to` radio buttons.
    enum Kind: String {
        case subject, group, persons
    }

    /// A group the form offers, with how many registered devices its members have (nil: not counted).
    struct GroupChoice {
        var group: Group
        var devices: Int?
    }

    /// The most members, summed over the groups shown, whose devices the form counts: beyond it a group shows its
    /// member count alone (counting reads each member's id once, a page of the form should not read a school's).
    static let deviceCountBudget = 10_000

    /// The groups `identity` may send to (`RecipientPolicy`), by id.
    let groups: [GroupChoice]
    /// Whether `identity` may send to persons directly.
    let mayMessagePersons: Bool

    /// The recipients `identity` may choose from, device counts included within `deviceCountBudget` when
    /// `countingDevices` (a form shown; not a form sent); groups that cannot be read leave the list empty (the form
    /// still sends to subjects).
    static func load(for identity: Identity, services: HubServices, countingDevices: Bool = true) async
        -> SendRecipients
    {
        let open = ((try? await services.groups.all()) ?? []).filter { RecipientPolicy.maySend(identity, to: $0) }
        var budget = Int64(deviceCountBudget)
        var choices: [GroupChoice] = []
        for group in open {
            var count: Int?
            if countingDevices, group.memberCount <= budget {
                budget -= group.memberCount
                count = try? await services.groups.deviceCount(of: group)
            }
            choices.append(GroupChoice(group: group, devices: count))
        }
        return SendRecipients(groups: choices, mayMessagePersons: RecipientPolicy.maySendToPersons(identity))
    }

    /// The person ids typed in `text`, one a line or separated by commas, blanks left out, in order.
    static func personIDs(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == "\n" || $0 == "," || $0 == "\r" })
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The groups as the form's select lists them, `selected` chosen.
    func selectData(selected: String) -> [[String: Any]] {
        groups.map { choice in
            var counts = [choice.group.memberCount == 1 ? "1 member" : "\(choice.group.memberCount) members"]
            counts.append(choice.devices.map(SendTargets.reachText) ?? "devices not counted")
            return [
                "id": choice.group.id, "name": choice.group.name, "counts": counts.joined(separator: " · "),
                "selected": choice.group.id == selected,
            ]
        }
    }

    /// Whom a message to `recipients` goes to, for people: "To group Class 7B", "To 3 persons", or both; a group
    /// not in `groupNames` (deleted since) by its id.
    static func text(_ recipients: Recipients, groupNames: [String: String]) -> String {
        var parts: [String] = []
        let names = recipients.groups.map { groupNames[$0] ?? $0 }
        if !names.isEmpty { parts.append((names.count == 1 ? "group " : "groups ") + names.joined(separator: ", ")) }
        let persons = recipients.persons.count
        if persons > 0 { parts.append(persons == 1 ? "1 person" : "\(persons) persons") }
        return "To " + (parts.isEmpty ? "no one" : parts.joined(separator: " and "))
    }

    /// The names of the groups `messages` are addressed to, read one group at a time (a page of messages names a
    /// few); a group that cannot be read is left out.
    static func groupNames(of messages: [Message], services: HubServices) async -> [String: String] {
        var names: [String: String] = [:]
        for id in Set(messages.flatMap { $0.recipients?.groups ?? [] }) {
            if let group = try? await services.groups.group(id: id) { names[id] = group.name }
        }
        return names
    }
}
