/// Calendar arithmetic without Foundation or libc: the legacy JSON's ISO dates and the HTTP `Date` header.
package enum CivilDate {
    /// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's `civil_from_days`).
    package static func from(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468  // days from 0000-03-01, so that leap days end each 400-year era
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
