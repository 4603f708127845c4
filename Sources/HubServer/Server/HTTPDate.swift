import DAO
import HubTime
import Mongo
import Synchronization

/// The `Date` header's value for now (RFC 9110 §5.6.7, `Sun, 06 Nov 1994 08:49:37 GMT`), formatted once per
/// second: the answers written from memory carry it as the router's answers do (Hummingbird's date cache is
/// its own).
enum HTTPDate {
    private static let cache = Mutex<(second: Int64, text: String)>((-1, ""))

    /// Now, as a `Date` header.
    static var now: String {
        let second = UnixTime.nowMilliseconds() / 1000
        return cache.withLock { cache in
            if cache.second != second { cache = (second, format(second)) }
            return cache.text
        }
    }

    /// `second` (since the epoch) in the IMF-fixdate form, in English whatever the locale.
    static func format(_ second: Int64) -> String {
        let days = second >= 0 ? second / 86_400 : (second - 86_399) / 86_400
        let time = second - days * 86_400
        let date = LocalDate(daysSinceEpoch: Int(days))
        let (year, month, day) = (Int64(date.year), Int64(date.month), Int64(date.day))
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        return "\(weekday), \(two(day)) \(months[Int(month - 1)]) \(year) "
            + "\(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }
}
