public import Foundation

/// The claims of a JWT, with typed access to registered and custom claims.
///
/// Registered claims of the wrong type read as `nil` through the convenience properties; use
/// ``date(_:)`` to tell "missing" (nil) from "wrong type or out of range" (an error).
public struct JWTClaims: Sendable, Hashable {
    /// The payload's UTF-8 JSON and where each claim lies in it (also for ``decode(_:decoder:)``).
    private let text: JSONObjectText

    init(text: JSONObjectText) {
        self.text = text
    }

    /// Every claim by name, parsed from the payload on each read (the registered-claim properties and the typed
    /// readers such as ``string(_:)`` read one claim without making the dictionary).
    public var members: [String: JSONValue] { text.dictionary }

    /// Dates after 9999-12-31 or before 1970 are out of range for a NumericDate here.
    static let latestNumericDate: Double = 253_402_300_799

    /// A claim by name.
    ///
    /// - Parameter name: The claim name.
    package subscript(name: String) -> JSONValue? { text.value(named: name) }

    /// `exp`: the expiration time, or `nil` when missing or not a valid NumericDate.
    public var expiration: Date? { try? date("exp") }
    /// `iat`: the issue time, or `nil` when missing or not a valid NumericDate.
    public var issuedAt: Date? { try? date("iat") }
    /// `nbf`: the not-before time, or `nil` when missing or not a valid NumericDate.
    public var notBefore: Date? { try? date("nbf") }
    /// `sub`: the subject, usually the user ID.
    public var subject: String? { string("sub") }
    /// `iss`: the issuer.
    public var issuer: String? { string("iss") }
    /// `jti`: the token ID.
    public var jwtID: String? { string("jti") }
    /// `aud`: the audiences, whether the claim is one string or an array of strings; empty when missing.
    public var audience: [String] {
        switch self["aud"] {
        case .string(let value): [value]
        case .array(let values): values.compactMap(\.stringValue)
        default: []
        }
    }

    /// A NumericDate claim (seconds since 1970, integer or fraction).
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The date, or `nil` when the claim is missing.
    /// - Throws: ``AuthTokenError/invalidClaim(_:)`` when the claim is not a number, is not finite,
    ///   is negative, or lies after the year 9999.
    public func date(_ name: String) throws(AuthTokenError) -> Date? {
        guard let value = self[name] else { return nil }
        guard let seconds = value.doubleValue, seconds.isFinite, seconds >= 0, seconds <= Self.latestNumericDate
        else { throw .invalidClaim(name) }
        return Date(timeIntervalSince1970: seconds)
    }

    /// A string claim, or `nil` when missing or of another type.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The string.
    public func string(_ name: String) -> String? { self[name]?.stringValue }
    /// A numeric claim as a `Double`, or `nil` when missing or of another type.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The number.
    public func number(_ name: String) -> Double? { self[name]?.doubleValue }
    /// An integral numeric claim, or `nil` when missing, of another type, or fractional.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The integer.
    public func integer(_ name: String) -> Int? { self[name]?.intValue }
    /// A Boolean claim, or `nil` when missing or of another type.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The Boolean.
    public func bool(_ name: String) -> Bool? { self[name]?.boolValue }
    /// An array claim, or `nil` when missing or of another type.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The elements.
    public func array(_ name: String) -> [JSONValue]? { self[name]?.arrayValue }
    /// An object claim, or `nil` when missing or of another type.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The members.
    public func object(_ name: String) -> [String: JSONValue]? { self[name]?.objectValue }

    /// Decodes the whole claims set into your own `Decodable` type.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder to use; a plain `JSONDecoder` by default.
    /// - Returns: The decoded value.
    /// - Throws: The decoder's error. Foundation's `DecodingError` may quote the offending value.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: Data(text.bytes))
    }
}
