public import AuthToken
public import Foundation

/// The claims of a token whose signature and claims have been verified.
///
/// `sub` and `iss` are always present (the verifier requires them); Clerk's session ID is ``sessionID``.
/// Custom claims are read by name with typed accessors, or decoded into a `Decodable` type.
///
/// The description and mirror name the algorithm, the `kid` and the claim names, never a claim value.
public struct VerifiedClaims: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// Every claim by name.
    public let members: [String: JSONValue]
    /// The algorithm the signature was verified with; for introspected claims (``isIntrospected``) a placeholder
    /// named `introspection`, since no signature was checked.
    public let algorithm: JWSAlgorithm
    /// The `kid` of the key that verified it, if the token named one.
    public let keyID: String?
    /// The payload's UTF-8 JSON bytes, for ``decode(_:decoder:)``.
    private let payload: [UInt8]
    /// The member ``subject`` reads: `sub`, or what an ``IntrospectionVerifier`` is configured with.
    private let subjectMember: String

    init(
        members: [String: JSONValue], payload: [UInt8], algorithm: JWSAlgorithm, keyID: String?,
        subjectMember: String = "sub"
    ) {
        self.members = members
        self.payload = payload
        self.algorithm = algorithm
        self.keyID = keyID
        self.subjectMember = subjectMember
    }

    /// Whether these are the answer of the issuer's RFC 7662 introspection endpoint (an ``IntrospectionVerifier``)
    /// rather than a signed token's claims. Then ``members`` are the answer's members (`active`, `scope`,
    /// `client_id`, `exp`, ...), ``algorithm`` is a placeholder and ``keyID`` is `nil`.
    public var isIntrospected: Bool { algorithm.family == .introspection }

    /// `sub`: the user (Clerk's `userId`); for introspected claims, the member
    /// ``IntrospectionVerifier/Configuration/subjectMember`` names (`sub` unless configured otherwise).
    public var subject: String { members[subjectMember]?.stringValue ?? "" }
    /// `sid`: Clerk's session ID, if present.
    public var sessionID: String? { members["sid"]?.stringValue }
    /// `iss`: the issuer, exactly as configured.
    public var issuer: String { members["iss"]?.stringValue ?? "" }
    /// `aud` as a list (a single string becomes one element); empty when absent.
    public var audience: [String] {
        switch members["aud"] {
        case .string(let value): [value]
        case .array(let values): values.compactMap(\.stringValue)
        default: []
        }
    }
    /// `exp`, if present.
    public var expiration: Date? { date("exp") }
    /// `iat`, if present.
    public var issuedAt: Date? { date("iat") }
    /// `nbf`, if present.
    public var notBefore: Date? { date("nbf") }
    /// `azp`: the authorized party (Clerk puts the frontend origin here), if present.
    public var authorizedParty: String? { members["azp"]?.stringValue }
    /// `jti`, if present.
    public var jwtID: String? { members["jti"]?.stringValue }

    /// A claim by name.
    ///
    /// - Parameter name: The claim name.
    public subscript(name: String) -> JSONValue? { members[name] }

    /// A string claim, or `nil` if absent or not a string.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The value.
    public func string(_ name: String) -> String? { members[name]?.stringValue }

    /// An integer claim, or `nil` if absent or not an integer.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The value.
    public func integer(_ name: String) -> Int? { members[name]?.intValue }

    /// A Boolean claim, or `nil` if absent or not a Boolean.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The value.
    public func bool(_ name: String) -> Bool? { members[name]?.boolValue }

    /// An array-of-strings claim (such as `roles`), or `nil` if absent or not all strings.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The strings.
    public func strings(_ name: String) -> [String]? {
        guard let array = members[name]?.arrayValue else { return nil }
        let strings = array.compactMap(\.stringValue)
        return strings.count == array.count ? strings : nil
    }

    /// A NumericDate claim, or `nil` if absent or not a number.
    ///
    /// - Parameter name: The claim name.
    /// - Returns: The date.
    public func date(_ name: String) -> Date? {
        members[name].flatMap(NumericDate.seconds).map { Date(timeIntervalSince1970: $0) }
    }

    /// Decodes the whole payload into `type`, for apps that model their custom claims.
    ///
    /// - Parameters:
    ///   - type: The claims type.
    ///   - decoder: The decoder; a default `JSONDecoder` unless given.
    /// - Returns: The decoded claims.
    /// - Throws: The decoder's error.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: Data(payload))
    }

    /// `VerifiedClaims(alg: RS256, kid: ..., claims: [names])`: never a claim value.
    public var description: String {
        "VerifiedClaims(alg: \(algorithm.name), kid: \(keyID ?? "none"), claims: \(members.keys.sorted()))"
    }

    /// A mirror without claim values, so `dump()` does not print them.
    public var customMirror: Mirror {
        Mirror(self, children: ["algorithm": algorithm.name, "keyID": keyID as Any, "claims": members.keys.sorted()])
    }

    /// Equal when the payloads, algorithms and key IDs are.
    public static func == (lhs: VerifiedClaims, rhs: VerifiedClaims) -> Bool {
        lhs.payload == rhs.payload && lhs.algorithm == rhs.algorithm && lhs.keyID == rhs.keyID
    }

    /// Hashes the payload.
    ///
    /// - Parameter hasher: The hasher.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(payload)
    }
}

/// RFC 7519 NumericDate: a JSON number of seconds since 1970, within 1970...9999.
enum NumericDate {
    static let latest: Double = 253_402_300_799

    static func seconds(_ value: JSONValue) -> Double? {
        guard let seconds = value.doubleValue, seconds.isFinite, seconds >= 0, seconds <= latest else { return nil }
        return seconds
    }
}
