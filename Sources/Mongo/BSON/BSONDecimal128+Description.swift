import CMongo

extension BSONDecimal128: CustomStringConvertible {
    /// The decimal's canonical string, as libbson writes it ("1.5E+3", "NaN").
    public var description: String {
        var value = bson_decimal128_t(low: low, high: high)
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(BSON_DECIMAL128_STRING)) { buffer in
            bson_decimal128_to_string(&value, buffer.baseAddress)
            return String(cString: buffer.baseAddress!)
        }
    }

    /// The decimal a string spells ("1.5", "-0", "Infinity"), or nil.
    public init?(_ string: String) {
        var value = bson_decimal128_t()
        guard bson_decimal128_from_string(string, &value) else { return nil }
        self.init(high: value.high, low: value.low)
    }
}
