import Foundation

// `Fuzz/run` compiles this file on its own, without the Persistence module.
#if canImport(Persistence)
    import Persistence
#endif
#if canImport(NetworkRetry)
    import NetworkRetry
#endif

/// An error from refreshing, signing in or signing out. Its description never contains token text,
/// a client secret or a password.
///
/// Compare with the static members (`error == .refreshTokenRejected`); equality looks at the code only,
/// so a ``transient`` error with a `Retry-After` still equals ``transient``. The classes tell a caller
/// what to do:
/// - terminal (``isTerminal``): the session is over; ask the user to sign in again.
/// - transient (``isTransient``): keep the session and try later; the app may be offline.
/// - configuration (``configuration``): the client is set up wrongly; nothing was wiped.
public struct TokenRefreshError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable, CaseIterable {
        case refreshTokenRejected, configuration, transient, timeout, rateLimited, signedOut, sessionExpired
        case missingRefreshToken, storageUnavailable, cancelled, malformedResponse, unexpectedResponse
        case signInRejected, invalidArgument, serverRefused, sessionInvalidated, sessionChanged, insecureEndpoint
    }
    private let code: Code
    /// The OAuth `error` code the token endpoint returned (`invalid_grant`, `invalid_client`), if any.
    /// Codes are short ASCII names from RFC 6749 section 5.2, never token text.
    public let oauthError: String?
    /// The HTTP status of the token endpoint's answer, if one arrived.
    public let status: Int?
    /// How long the server asked the client to wait (`Retry-After`), or how long the rate breaker blocks.
    public let retryAfter: Duration?
    /// Whether the failure looks like missing connectivity (a connection error or a timeout) rather than
    /// a server answer.
    public let isConnectivityFailure: Bool
    /// The underlying error (a transport error, a `Persistence` error), if any. It is not part of
    /// ``description``: transport errors are not ours to vouch for.
    public let underlying: (any Error)?

    private init(
        _ code: Code, oauthError: String? = nil, status: Int? = nil, retryAfter: Duration? = nil,
        isConnectivityFailure: Bool = false, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.oauthError = oauthError
        self.status = status
        self.retryAfter = retryAfter
        self.isConnectivityFailure = isConnectivityFailure
        self.underlying = underlying
    }

    /// The server rejected the refresh token (`invalid_grant`): the session is over. Terminal.
    public static let refreshTokenRejected = TokenRefreshError(.refreshTokenRejected, oauthError: "invalid_grant")
    /// The client is configured wrongly (`invalid_client`, `unauthorized_client`, `unsupported_grant_type`,
    /// `invalid_scope`, `invalid_request`). The session is kept.
    public static let configuration = TokenRefreshError(.configuration)
    /// A failure worth retrying later: a connection error, a 5xx, a 429 or a 408. The session is kept.
    public static let transient = TokenRefreshError(.transient)
    /// The refresh did not finish within the configured timeout. Transient; the session is kept.
    public static let timeout = TokenRefreshError(.timeout, isConnectivityFailure: true)
    /// The refresh rate breaker is open: too many refreshes in the configured window. ``retryAfter`` says
    /// when the next one may start.
    public static let rateLimited = TokenRefreshError(.rateLimited)
    /// There is no session: the user is signed out (or signed out while the request waited).
    public static let signedOut = TokenRefreshError(.signedOut)
    /// The access token expired and the session has no way to get another (no refresh token). Terminal.
    public static let sessionExpired = TokenRefreshError(.sessionExpired)
    /// A refresh needs a refresh token and the session has none.
    public static let missingRefreshToken = TokenRefreshError(.missingRefreshToken)
    /// The token store cannot be read right now (a locked Keychain). This is not "signed out".
    public static let storageUnavailable = TokenRefreshError(.storageUnavailable)
    /// The caller's task was cancelled while it waited. The shared refresh goes on.
    public static let cancelled = TokenRefreshError(.cancelled)
    /// The token endpoint answered with something that is not a token response.
    public static let malformedResponse = TokenRefreshError(.malformedResponse)
    /// The token endpoint answered with a status or error code TokenKit does not classify.
    public static let unexpectedResponse = TokenRefreshError(.unexpectedResponse)
    /// The token endpoint rejected a sign-in (wrong password, a used or expired authorization code).
    public static let signInRejected = TokenRefreshError(.signInRejected)
    /// The server says the session no longer exists (a cookie session's check answered `null` or 401: logged
    /// out on another device, expired, or the account deleted). Terminal: the session ends with
    /// ``AuthEvent/SignOutReason/invalidatedOnServer``.
    public static let sessionInvalidated = TokenRefreshError(.sessionInvalidated)
    /// The server refused a request that was to end the session on its side (an account deletion, a
    /// sign-out everywhere); ``status`` says how. The local session is kept.
    public static let serverRefused = TokenRefreshError(.serverRefused)
    /// An argument is unusable (an endpoint URL without a host, a malformed PKCE verifier).
    public static let invalidArgument = TokenRefreshError(.invalidArgument)
    /// The request started under a session that is no longer the current one (the app signed out, or signed
    /// another user in, while it was under way). It is never retried with the new session's token: send it
    /// again for the new user only if it is meant for them. The current session is kept.
    public static let sessionChanged = TokenRefreshError(.sessionChanged)
    /// An endpoint URL (token endpoint, refresh, sign-in, session check, revocation) is plain `http` to a host
    /// that is not loopback, so nothing was sent. A configuration error: the session is kept.
    public static let insecureEndpoint = TokenRefreshError(.insecureEndpoint)

    /// Whether the session is over and the user must sign in again.
    public var isTerminal: Bool {
        code == .refreshTokenRejected || code == .sessionExpired || code == .sessionInvalidated
    }
    /// Whether trying again later may succeed, with the session kept meanwhile.
    public var isTransient: Bool { code == .transient || code == .timeout }

    /// Returns this error with an OAuth error code attached. Public (unlike the other builders) for sign-in
    /// flows of an app's own, which report their endpoint's refusals as a `TokenRefreshError`.
    ///
    /// - Parameter oauthError: The `error` field of an RFC 6749 section 5.2 response.
    /// - Returns: The same error with the code.
    public func with(oauthError: String?) -> TokenRefreshError { copy(oauthError: .some(oauthError)) }

    /// Returns this error with an HTTP status attached. Public for the same sign-in flows.
    ///
    /// - Parameter status: The status code.
    /// - Returns: The same error with the status.
    public func with(status: Int?) -> TokenRefreshError { copy(status: .some(status)) }

    /// Returns this error with a wait attached.
    ///
    /// - Parameter retryAfter: How long to wait before trying again.
    /// - Returns: The same error with the wait.
    package func with(retryAfter: Duration?) -> TokenRefreshError { copy(retryAfter: .some(retryAfter)) }

    /// Returns this error with an underlying cause attached.
    ///
    /// - Parameter underlying: The cause.
    /// - Returns: The same error with the cause.
    package func with(underlying: (any Error)?) -> TokenRefreshError { copy(underlying: .some(underlying)) }

    /// Returns this error marked as a connectivity failure (or not).
    ///
    /// - Parameter connectivity: Whether the failure was a connection error or timeout.
    /// - Returns: The same error with the flag.
    package func with(connectivityFailure connectivity: Bool) -> TokenRefreshError {
        copy(connectivity: connectivity)
    }

    private func copy(
        oauthError: String?? = nil, status: Int?? = nil, retryAfter: Duration?? = nil,
        underlying: (any Error)?? = nil, connectivity: Bool? = nil
    ) -> TokenRefreshError {
        TokenRefreshError(
            code, oauthError: oauthError ?? self.oauthError, status: status ?? self.status,
            retryAfter: retryAfter ?? self.retryAfter, isConnectivityFailure: connectivity ?? isConnectivityFailure,
            underlying: underlying ?? self.underlying)
    }

    /// One error of each code, for the tests that check every code has its messages.
    package static var everyCode: [TokenRefreshError] { Code.allCases.map { TokenRefreshError($0) } }
    /// The key of the error's message in the translations: `TokenRefreshError.<code>`, and
    /// `TokenRefreshError.transient.connectivity` for a transient failure to connect.
    package var messageKey: String {
        "TokenRefreshError.\(code.rawValue)" + (code == .transient && isConnectivityFailure ? ".connectivity" : "")
    }

    /// Two errors are equal when their codes are, whatever else they carry.
    public static func == (lhs: TokenRefreshError, rhs: TokenRefreshError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `TokenRefreshError.<code>` with the OAuth code, status, wait and the underlying cause, if any. Never token
    /// text, and never the cause's own text (a transport error's may carry a URL): a store's error as it describes
    /// itself (secret-free by contract), a transport error's kind and reason, a URL or POSIX error's code, and
    /// otherwise the cause's type, such as
    /// `TokenRefreshError.transient(connectivity, cause: NetworkRetryError.cannotConnect, cannotResolveHost)`.
    public var description: String {
        var parts: [String] = []
        if let oauthError { parts.append(oauthError) }
        if let status { parts.append("HTTP \(status)") }
        if let retryAfter { parts.append("retry after \(retryAfter.components.seconds) s") }
        if isConnectivityFailure && code == .transient { parts.append("connectivity") }
        if let underlying {
            // A store's errors say why a session could not be kept (a path, a mode).
            #if canImport(Persistence)
                if let persistence = underlying as? PersistenceError {
                    parts.append("\(persistence)")
                } else {
                    parts.append("cause: " + Self.cause(underlying).joined(separator: ", "))
                }
            #else
                parts.append("cause: " + Self.cause(underlying).joined(separator: ", "))
            #endif
        }
        let detail = parts.isEmpty ? "" : "(" + parts.joined(separator: ", ") + ")"
        return name + detail
    }

    /// `TokenRefreshError.<code>`, with nothing the error carries.
    var name: String { "TokenRefreshError.\(code.rawValue)" }

    /// What a log may say of `error`, outermost first: kinds, reasons and codes, never the error's own text.
    static func cause(_ error: any Error, depth: Int = 0) -> [String] {
        guard depth < 4 else { return [] }
        switch error {
        case let error as TokenRefreshError:
            return ["\(error)"]
        case let error as URLError:
            return ["URLError \(error.code.rawValue)"]
        case let error as POSIXError:
            return ["POSIXError \(error.code.rawValue)"]
        case is CancellationError:
            return ["CancellationError"]
        default:
            #if canImport(NetworkRetry)
                if let error = error as? NetworkRetryError {
                    var parts = ["\(error)"]
                    if let reason = error.reason { parts.append("\(reason)") }
                    if let underlying = error.underlying { parts += cause(underlying, depth: depth + 1) }
                    return parts
                }
            #endif
            #if canImport(Persistence)
                if let error = error as? PersistenceError { return ["\(error)"] }
            #endif
            return [String(describing: type(of: error))]
        }
    }
}
