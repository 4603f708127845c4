import DAO

/// The add and edit form of a channel, area or subject, read and checked field by field.
struct CubeForm {
    /// The fields as the admin filled them (kept to show the form again).
    struct Values {
        var name = ""
        var desc = ""
        /// Usernames separated by commas, spaces or lines.
        var access = ""
        var level = ""
        var distribution = ""

        var dictionary: [String: String] {
            ["name": name, "desc": desc, "access": access, "level": level, "distribution": distribution]
        }
    }

    var values: Values
    /// An error message per field.
    var errors: [String: String] = [:]
    /// The access list; empty lets everyone send.
    var access: [String] = []
    /// For a subject without errors: its draft.
    var subjectDraft: SubjectDraft?

    init(_ form: PortalForm, isSubject: Bool) {
        values = Values(
            name: form.trimmed("name"), desc: form.trimmed("desc"), access: form.trimmed("access"),
            level: form.trimmed("level"), distribution: form.trimmed("distribution"))
        if values.name.isEmpty {
            errors["name"] = "Enter a name."
        } else if values.name.count > FieldLimits.name {
            errors["name"] = "A name has at most \(FieldLimits.name) characters."
        }
        if values.desc.count > FieldLimits.desc {
            errors["desc"] = "A description has at most \(FieldLimits.desc) characters."
        }
        access = values.access.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
        if let long = access.first(where: { $0.count > 200 }) {
            errors["access"] = "“\(long.prefix(40))…” is too long for a username."
        } else if access.count > 1_000 {
            errors["access"] = "At most 1000 usernames."
        }
        guard isSubject else { return }
        let level = SubscriptionLevel(rawValue: values.level)
        let distribution = Distribution(rawValue: values.distribution)
        if level == nil { errors["level"] = "Choose a level." }
        if distribution == nil { errors["distribution"] = "Choose Alert or Information." }
        if let level, let distribution, errors.isEmpty {
            subjectDraft = SubjectDraft(
                name: values.name, desc: values.desc, level: level, distribution: distribution,
                access: access)
        }
    }
}
