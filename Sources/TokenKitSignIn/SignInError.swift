import TokenRefresh
import TokenVerification

/// Why a browser sign-in, a device sign-in or a sign-out at the provider did not go through. Its description never
/// contains a code, a token, a `state`, a nonce or a verifier.
///
/// Compare with the static members (`error == .stateMismatch`); equality looks at the code only. An error the
/// authorization server sent on the redirect or during device polling keeps the server's code in ``oauthError``.
/// Token endpoint failures (a refused code, an unreachable server) stay `TokenRefreshError`s, and a refused ID token
/// is ``idTokenRejected`` with the `TokenVerificationError` in ``underlying``.
public struct SignInError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable {
        case stateMismatch, unknownFlight, foreignRedirect, issuerMismatch, accessDenied, authorizationFailed
        case missingCode, idTokenRejected, nonceMismatch, discoveryFailed, cancelled, expired, insecureURL, timedOut
    }
    private let code: Code
    /// The OAuth `error` code the server sent (`access_denied`, `login_required`, `expired_token`), if any.
    public let oauthError: String?
    /// The cause (a `TokenVerificationError` for ``idTokenRejected``, a transport error), if any.
    public let underlying: (any Error)?

    private init(_ code: Code, oauthError: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.oauthError = oauthError
        self.underlying = underlying
    }

    /// The redirect's `state` is not the one this sign-in sent: a redirect meant for another sign-in, or forged
    /// (RFC 6749 section 10.12). Nothing was exchanged.
    public static let stateMismatch = SignInError(.stateMismatch)
    /// The sign-in this redirect answers has already finished (a replayed redirect) or was never started here.
    public static let unknownFlight = SignInError(.unknownFlight)
    /// The URL is not at the configured redirect URI (another scheme, host, port or path).
    public static let foreignRedirect = SignInError(.foreignRedirect)
    /// The redirect's `iss` is not the authorization server's issuer, or the server promised an `iss` and sent none
    /// (RFC 9207): the answer came from another server (a mix-up attack). Nothing was exchanged.
    public static let issuerMismatch = SignInError(.issuerMismatch)
    /// The user (or the server for them) declined the sign-in (`error=access_denied`).
    public static let accessDenied = SignInError(.accessDenied, oauthError: "access_denied")
    /// The server answered the authorization request with an error other than `access_denied`; ``oauthError``
    /// has its code (`login_required`, `invalid_scope`, `server_error`, ...).
    public static let authorizationFailed = SignInError(.authorizationFailed)
    /// The redirect carries neither a `code` nor an `error`.
    public static let missingCode = SignInError(.missingCode)
    /// The ID token failed verification (signature, `iss`, `aud`, `azp`, `exp`, `iat`, `at_hash`, `c_hash`); the
    /// `TokenVerificationError` is in ``underlying`` when the verifier refused it. No session was stored.
    public static let idTokenRejected = SignInError(.idTokenRejected)
    /// The ID token's `nonce` is not the one this sign-in sent (a replayed or injected ID token). No session was
    /// stored.
    public static let nonceMismatch = SignInError(.nonceMismatch)
    /// The discovery document could not be fetched, or is not valid for the issuer asked for.
    public static let discoveryFailed = SignInError(.discoveryFailed)
    /// The user closed the browser, or the task was cancelled.
    public static let cancelled = SignInError(.cancelled)
    /// The device code expired before the user approved (RFC 8628 `expired_token`, or its `expires_in` passed).
    public static let expired = SignInError(.expired)
    /// An endpoint the server named is plain `http` to a host that is not loopback; nothing was sent to it.
    public static let insecureURL = SignInError(.insecureURL)
    /// The browser did not come back within the user agent's timeout (``LoopbackRedirectUserAgent``).
    public static let timedOut = SignInError(.timedOut)

    /// Returns this error with the server's OAuth code.
    func with(oauthError: String?) -> SignInError { SignInError(code, oauthError: oauthError, underlying: underlying) }

    /// Returns this error with a cause.
    func with(underlying: (any Error)?) -> SignInError {
        SignInError(code, oauthError: oauthError, underlying: underlying)
    }

    /// The key of the error's message in the translations: `SignInError.<code>`.
    package var messageKey: String { "SignInError.\(code.rawValue)" }

    /// One error of each code, for the tests that check every code has its messages.
    package static var everyCode: [SignInError] {
        [
            stateMismatch, unknownFlight, foreignRedirect, issuerMismatch, accessDenied, authorizationFailed,
            missingCode, idTokenRejected, nonceMismatch, discoveryFailed, cancelled, expired, insecureURL, timedOut,
        ]
    }

    /// The English message for a person (the app's user, or whoever reads the log).
    package var englishDescription: String {
        switch code {
        case .stateMismatch, .unknownFlight, .foreignRedirect, .issuerMismatch, .missingCode:
            "The sign-in could not be completed. Please try again."
        case .accessDenied: "The sign-in was declined."
        case .authorizationFailed: "The sign-in service refused the request."
        case .idTokenRejected, .nonceMismatch: "The sign-in service's answer could not be verified. Please try again."
        case .discoveryFailed: "The sign-in service could not be reached or is not set up correctly."
        case .cancelled: "The sign-in was cancelled."
        case .expired: "The sign-in code expired. Please start again."
        case .insecureURL: "The sign-in service named an address that is not secure."
        case .timedOut: "The sign-in took too long. Please start again."
        }
    }

    /// Two errors are equal when their codes are.
    public static func == (lhs: SignInError, rhs: SignInError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `SignInError.<code>` with the server's OAuth code and the cause's description when it is a TokenKit error.
    public var description: String {
        var parts: [String] = []
        if let oauthError { parts.append(oauthError) }
        if let underlying { parts.append("cause: \(Self.describe(underlying))") }
        return "SignInError.\(code.rawValue)" + (parts.isEmpty ? "" : "(" + parts.joined(separator: ", ") + ")")
    }

    /// A TokenKit error describes itself without secrets; anything else by its type only.
    private static func describe(_ error: any Error) -> String {
        switch error {
        case let error as TokenVerificationError: "\(error)"
        case let error as TokenRefreshError: "\(error)"
        case let error as SignInError: "\(error)"
        default: String(reflecting: type(of: error))
        }
    }

}
