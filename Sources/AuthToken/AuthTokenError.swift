/// A problem with a token or its JWT claims. Descriptions never contain token text or claim values.
///
/// Compare with the static members: `error == .expired`, `error == .malformedJWT(.payload, .notJSON)`.
public struct AuthTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable, CaseIterable {
        case emptyAccessToken, malformedJWT, missingExpiration, invalidClaim, expired, notYetValid
        case issuedInFuture, emptyRefreshToken, missingRefreshToken, expirationUnknown
    }
    private let code: Code
    /// For ``malformedJWT(_:_:)``: the part of the token that is malformed.
    public let part: JWTPart?
    /// For ``malformedJWT(_:_:)``: what is wrong with it.
    public let reason: MalformedReason?
    /// For ``invalidClaim(_:)``: the claim's name (never its value).
    public let claim: String?

    private init(_ code: Code, part: JWTPart? = nil, reason: MalformedReason? = nil, claim: String? = nil) {
        self.code = code
        self.part = part
        self.reason = reason
        self.claim = claim
    }

    /// The access token is empty.
    public static let emptyAccessToken = AuthTokenError(.emptyAccessToken)
    /// The access token looks like a JWT but a part of it cannot be read.
    ///
    /// - Parameters:
    ///   - part: The part that is malformed.
    ///   - reason: What is wrong with it.
    /// - Returns: The error.
    public static func malformedJWT(_ part: JWTPart, _ reason: MalformedReason) -> AuthTokenError {
        AuthTokenError(.malformedJWT, part: part, reason: reason)
    }
    /// A JWT has no `exp` claim and no `expires_in` was given.
    public static let missingExpiration = AuthTokenError(.missingExpiration)
    /// A registered claim has the wrong type or a value out of range (`exp` as a string, a negative date).
    ///
    /// - Parameter name: The claim's name.
    /// - Returns: The error.
    public static func invalidClaim(_ name: String) -> AuthTokenError { AuthTokenError(.invalidClaim, claim: name) }
    /// The token has expired.
    public static let expired = AuthTokenError(.expired)
    /// The JWT's `nbf` is in the future beyond the leeway.
    public static let notYetValid = AuthTokenError(.notYetValid)
    /// The JWT's `iat` is in the future beyond the leeway.
    public static let issuedInFuture = AuthTokenError(.issuedInFuture)
    /// The refresh token is present but empty.
    public static let emptyRefreshToken = AuthTokenError(.emptyRefreshToken)
    /// A refresh token is required and there is none.
    public static let missingRefreshToken = AuthTokenError(.missingRefreshToken)
    /// Nothing says when the token expires (an opaque token without `expires_in`), so it is never
    /// reported as expired.
    public static let expirationUnknown = AuthTokenError(.expirationUnknown)

    /// One error of each code, for the tests that check every code has its messages.
    package static var everyCode: [AuthTokenError] { Code.allCases.map { AuthTokenError($0) } }
    /// The key of the error's message in the translations: `AuthTokenError.<code>`.
    package var messageKey: String { "AuthTokenError.\(code.rawValue)" }

    /// `AuthTokenError.<code>` with the part, reason or claim name; never token text.
    public var description: String {
        var text = "AuthTokenError.\(code.rawValue)"
        if let part, let reason { text += "(\(part.rawValue): \(reason.rawValue))" }
        if let claim { text += "(\(claim))" }
        return text
    }
}

/// The parts of a compact JWT.
public enum JWTPart: String, Sendable, Hashable, CaseIterable {
    /// The whole token: its length or its number of segments.
    case structure
    /// The JOSE header, the first segment.
    case header
    /// The claims, the second segment.
    case payload
    /// The signature, the third segment.
    case signature
}

/// Why a JWT part could not be read.
public enum MalformedReason: String, Sendable, Hashable, CaseIterable {
    /// The token does not have exactly three dot-separated segments.
    case segmentCount
    /// A segment that must have content is empty.
    case emptySegment
    /// The token is longer than 64 KiB.
    case tooLong
    /// The segment is not valid base64url.
    case invalidBase64URL
    /// The decoded bytes are not valid UTF-8.
    case notUTF8
    /// The decoded text is not valid JSON.
    case notJSON
    /// The JSON is valid but not an object.
    case notJSONObject
    /// The JSON nests deeper than the parser allows.
    case tooDeep
}
