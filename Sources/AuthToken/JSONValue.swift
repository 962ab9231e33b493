/// A JSON value read from a JWT header or payload.
public enum JSONValue: Sendable, Hashable {
    /// A string.
    case string(String)
    /// An integer literal that fits in `Int`.
    case integer(Int)
    /// Any other number (a fraction, an exponent, or an integer too large for `Int`).
    case number(Double)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null
    /// An array.
    case array([JSONValue])
    /// An object. When a name repeats, the last value wins (RFC 7519 section 4).
    case object([String: JSONValue])

    /// The string, if this is one.
    package var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number as a `Double`, if this is a number.
    package var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    /// The number as an `Int`, if this is an integer or a number with no fractional part that fits.
    package var intValue: Int? {
        switch self {
        case .integer(let value): value
        case .number(let value): Int(exactly: value)
        default: nil
        }
    }

    /// The Boolean, if this is one.
    package var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    package var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, if this is an object.
    package var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }
}
