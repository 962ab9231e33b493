// Standard library only: compiled into the fuzz target with WWWAuthenticate.swift.

/// The RFC 6750 parameters of a `Bearer` challenge, plus the RFC 9470 step-up parameters, as a
/// ``NetworkRetryError/challenge``. The challenge's `error` code is the error's own code
/// (``NetworkRetryError/insufficientScope``, ``NetworkRetryError/insufficientUserAuthentication``).
///
/// ```swift
/// // WWW-Authenticate: Bearer error="insufficient_scope", scope="read write"
/// error == .insufficientScope     // true
/// error.challenge?.scope          // "read write"
/// ```
public struct BearerChallenge: Sendable, Hashable {
    /// An RFC 6750 / RFC 9470 error code. An open set: servers send others, kept as ``rawValue``.
    package struct ErrorCode: RawRepresentable, Sendable, Hashable {
        /// The code as sent.
        package let rawValue: String

        /// Wraps a code as sent.
        ///
        /// - Parameter rawValue: The `error` parameter's value.
        package init(rawValue: String) { self.rawValue = rawValue }

        /// `invalid_request`: the request is malformed; a refresh does not help.
        package static let invalidRequest = ErrorCode(rawValue: "invalid_request")
        /// `invalid_token`: the token is expired, revoked or malformed; refresh and retry.
        package static let invalidToken = ErrorCode(rawValue: "invalid_token")
        /// `insufficient_scope`: the token lacks a scope; a refresh does not help.
        package static let insufficientScope = ErrorCode(rawValue: "insufficient_scope")
        /// `insufficient_user_authentication` (RFC 9470): the user must authenticate again, more strongly.
        package static let insufficientUserAuthentication = ErrorCode(rawValue: "insufficient_user_authentication")
    }

    /// The `realm` parameter.
    package let realm: String?
    /// The `error` parameter.
    package let error: ErrorCode?
    /// The `error_description` parameter: text for developers, not for users.
    public let errorDescription: String?
    /// The `error_uri` parameter.
    package let errorURI: String?
    /// The `scope` parameter: the scope the resource needs (space separated).
    public let scope: String?
    /// The RFC 9470 `acr_values` parameter: the authentication context classes the resource accepts.
    public let acrValues: String?
    /// The RFC 9470 `max_age` parameter in seconds, if it is a non-negative integer.
    public let maxAge: Int?

    /// Reads the Bearer parameters of `challenge`; `nil` if its scheme is not `Bearer`.
    ///
    /// A Bearer challenge with a token68 instead of parameters (not RFC 6750 syntax) gives all-`nil` fields.
    ///
    /// - Parameter challenge: A parsed challenge.
    package init?(_ challenge: AuthenticationChallenge) {
        guard challenge.isScheme("Bearer") else { return nil }
        realm = challenge[parameter: "realm"]
        error = challenge[parameter: "error"].map(ErrorCode.init(rawValue:))
        errorDescription = challenge[parameter: "error_description"]
        errorURI = challenge[parameter: "error_uri"]
        scope = challenge[parameter: "scope"]
        acrValues = challenge[parameter: "acr_values"]
        maxAge = challenge[parameter: "max_age"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Reads the first Bearer challenge among `challenges`; `nil` if there is none.
    ///
    /// - Parameter challenges: Parsed challenges, for example from `AuthenticationChallenge.parse(_:)`.
    package init?(firstIn challenges: [AuthenticationChallenge]) {
        guard let bearer = challenges.first(where: { $0.isScheme("Bearer") }) else { return nil }
        self.init(bearer)
    }
}
