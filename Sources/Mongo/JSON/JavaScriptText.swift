import HubTime

/// The text JavaScript gives a number and a `Date`, written by arithmetic into a byte buffer.
///
/// The legacy hub's JSON came from `JSON.stringify`, so numbers follow ECMAScript's `Number::toString`
/// and dates `Date.prototype.toJSON` (`toISOString`). Both run once per value on GET /channel's cube
/// load, so neither goes through Foundation formatters.
enum JavaScriptText {
    /// The most a JavaScript `Date` holds either side of the epoch, in milliseconds (ECMAScript TimeClip).
    static let maximumDateMilliseconds: Int64 = 8_640_000_000_000_000

    /// Appends `JSON.stringify(number)`: `Number::toString`, or `null` for NaN and the infinities.
    static func appendNumber(_ value: Double, to out: inout [UInt8]) {
        guard value.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        if value.rounded() == value, value.magnitude < 1e15 {
            // Integral and exact in an Int64 (this also writes -0 as "0", as JavaScript does).
            appendInteger(Int64(value), to: &out)
            return
        }
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // Swift's description has the shortest digits that round-trip, the digits ECMAScript asks for;
        // only their layout differs ("1e+16", "1e-05", "100.0"), so take the digits and lay them out again.
        let (digits, pointPosition) = shortestDigits(value.magnitude)
        let count = digits.count
        let zero = UInt8(ascii: "0")
        if count <= pointPosition, pointPosition <= 21 {
            out.append(contentsOf: digits)
            out.append(contentsOf: repeatElement(zero, count: pointPosition - count))
        } else if 0 < pointPosition, pointPosition <= 21 {
            out.append(contentsOf: digits[..<pointPosition])
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: digits[pointPosition...])
        } else if -6 < pointPosition, pointPosition <= 0 {
            out.append(contentsOf: [zero, UInt8(ascii: ".")])
            out.append(contentsOf: repeatElement(zero, count: -pointPosition))
            out.append(contentsOf: digits)
        } else {
            out.append(digits[0])
            if count > 1 {
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: digits[1...])
            }
            let exponent = pointPosition - 1
            out.append(contentsOf: exponent < 0 ? "e-".utf8 : "e+".utf8)
            appendInteger(Int64(exponent.magnitude), to: &out)
        }
    }

    /// The significant digits of a positive finite `value` and where the decimal point falls among
    /// them: `value` = 0.d₁d₂…dₖ × 10^pointPosition, with no leading or trailing zero digit.
    private static func shortestDigits(_ value: Double) -> (digits: [UInt8], pointPosition: Int) {
        let text = value.description.utf8
        var digits: [UInt8] = []
        var pointPosition: Int?
        var exponent = 0
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            if byte == UInt8(ascii: ".") {
                pointPosition = digits.count
            } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                exponent = Int(Substring(text[text.index(after: index)...])) ?? 0
                break
            } else {
                digits.append(byte)
            }
            index = text.index(after: index)
        }
        var point = (pointPosition ?? digits.count) + exponent
        let leadingZeros = digits.prefix { $0 == UInt8(ascii: "0") }.count
        point -= leadingZeros
        let significant = digits[leadingZeros...].reversed().drop { $0 == UInt8(ascii: "0") }.reversed()
        return (Array(significant), point)
    }

    /// Appends `JSON.stringify(new Date(milliseconds))`: `"2017-08-28T09:00:00.000Z"`, with a signed
    /// six-digit year outside 0...9999 (`"+275760-09-13T00:00:00.000Z"`), or `null` beyond the range
    /// a JavaScript `Date` holds.
    static func appendDate(milliseconds: Int64, to out: inout [UInt8]) {
        guard milliseconds.magnitude <= maximumDateMilliseconds.magnitude else {
            out.append(contentsOf: "null".utf8)
            return
        }
        let millisecondsPerDay: Int64 = 86_400_000
        var days = milliseconds / millisecondsPerDay
        var timeOfDay = milliseconds % millisecondsPerDay
        if timeOfDay < 0 {
            timeOfDay += millisecondsPerDay
            days -= 1
        }
        let date = LocalDate(daysSinceEpoch: Int(days))
        let (year, month, day) = (Int64(date.year), Int64(date.month), Int64(date.day))
        out.append(UInt8(ascii: "\""))
        if (0...9999).contains(year) {
            appendDigits(year, width: 4, to: &out)
        } else {
            out.append(year < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            appendDigits(year.magnitude, width: 6, to: &out)
        }
        out.append(UInt8(ascii: "-"))
        appendDigits(month, width: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(day, width: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendDigits(timeOfDay / 3_600_000, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(timeOfDay / 60_000 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(timeOfDay / 1000 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendDigits(timeOfDay % 1000, width: 3, to: &out)
        out.append(contentsOf: "Z\"".utf8)
    }

    /// Appends the decimal digits of `value`.
    static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        appendDigits(value.magnitude, width: 1, to: &out)
    }

    /// Appends the decimal digits of a non-negative `value`, zero-padded to `width`.
    private static func appendDigits(_ value: some BinaryInteger, width: Int, to out: inout [UInt8]) {
        // Least significant digit first, then turned around in place: no buffer per number.
        var remaining = UInt64(value)
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(remaining % 10))
            remaining /= 10
        } while remaining > 0 || out.count - start < width
        out[start...].reverse()
    }
}
