/// A failure of an authenticated request. Descriptions never contain header values, tokens or bodies.
///
/// Compare with the static members: `error == .unauthorizedAfterRefresh`. Two errors are equal when their
/// codes are; the attached ``underlying`` error, ``challenge`` and ``status`` do not take part.
public struct NetworkRetryError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable, CaseIterable {
        case unauthorizedAfterRefresh, unauthorized, insufficientScope, insufficientUserAuthentication
        case transport, timedOut, cannotConnect, invalidResponse
        case insecureTransport, originNotAllowed, invalidRequest, noToken
        case tooManyRedirects, invalidRedirect, bodyTooLarge, bodyNotReplayable
        case responseTooLarge, clientFollowsRedirects
        case dpopKeyUnavailable, dpopProofRejected
    }
    private let code: Code
    /// For ``transport``, ``timedOut`` and ``cannotConnect``: the error the HTTP client threw, if kept.
    ///
    /// Its own description may contain the URL; do not log it where the URL's query could hold secrets.
    public let underlying: (any Error)?
    /// For the authorization errors: the server's Bearer challenge, if it sent one.
    public let challenge: BearerChallenge?
    /// The HTTP status of the response that caused the error, if one did.
    public let status: Int?

    private init(
        _ code: Code, underlying: (any Error)? = nil, challenge: BearerChallenge? = nil, status: Int? = nil
    ) {
        self.code = code
        self.underlying = underlying
        self.challenge = challenge
        self.status = status
    }

    /// The request was rejected with 401 again after the token was refreshed; there is no further retry.
    public static let unauthorizedAfterRefresh = NetworkRetryError(.unauthorizedAfterRefresh)
    /// The request was rejected with 401 for a reason a refresh cannot fix: the server asked for another
    /// scheme, sent `error="invalid_request"`, or the request carried no token (after a cross-origin redirect).
    public static let unauthorized = NetworkRetryError(.unauthorized)
    /// The token lacks a scope the resource needs (`error="insufficient_scope"`, normally with 403).
    /// Refreshing does not help; ``challenge`` carries the `scope` the server asked for, if any.
    public static let insufficientScope = NetworkRetryError(.insufficientScope)
    /// The server wants a stronger or more recent authentication (RFC 9470,
    /// `error="insufficient_user_authentication"`). Refreshing does not help; the user must sign in again with
    /// the `acr_values` or `max_age` in ``challenge``.
    public static let insufficientUserAuthentication = NetworkRetryError(.insufficientUserAuthentication)
    /// The HTTP client failed for another reason; the cause is in ``underlying``.
    public static let transport = NetworkRetryError(.transport)
    /// The HTTP client timed out.
    public static let timedOut = NetworkRetryError(.timedOut)
    /// The HTTP client could not connect (refused, host not found, offline).
    public static let cannotConnect = NetworkRetryError(.cannotConnect)
    /// The HTTP client returned something that is not an HTTP response.
    public static let invalidResponse = NetworkRetryError(.invalidResponse)
    /// A token would have gone over plain `http` to a host that is not loopback; nothing was sent.
    public static let insecureTransport = NetworkRetryError(.insecureTransport)
    /// The request's origin is not one of the configured origins; nothing was sent.
    public static let originNotAllowed = NetworkRetryError(.originNotAllowed)
    /// The request has no usable absolute URL (scheme other than `http`/`https`, no authority, user info).
    public static let invalidRequest = NetworkRetryError(.invalidRequest)
    /// The token provider handed out an empty access token; nothing was sent.
    public static let noToken = NetworkRetryError(.noToken)
    /// More redirects than ``AuthenticatedClient/Configuration/maximumRedirects`` were followed.
    public static let tooManyRedirects = NetworkRetryError(.tooManyRedirects)
    /// A redirect had no usable `Location` (missing, not a URL, or not `http`/`https`).
    public static let invalidRedirect = NetworkRetryError(.invalidRedirect)
    /// A request body is larger than the configured limit, so it cannot be buffered for a replay.
    public static let bodyTooLarge = NetworkRetryError(.bodyTooLarge)
    /// A request body is a stream that can be iterated only once, so it cannot be replayed after a refresh.
    public static let bodyNotReplayable = NetworkRetryError(.bodyNotReplayable)
    /// The response body is larger than the transport's limit (``URLSessionTransport``'s `maximumResponseBytes`);
    /// reading stopped there and nothing of it was returned.
    public static let responseTooLarge = NetworkRetryError(.responseTooLarge)
    /// The transport's HTTP client follows redirects by itself (an AsyncHTTPClient `HTTPClient` made without
    /// `redirectConfiguration: .disallow`): it would send a request's body and credentials on to wherever a redirect
    /// points, so nothing was sent.
    public static let clientFollowsRedirects = NetworkRetryError(.clientFollowsRedirects)
    /// The token is bound to a DPoP key (RFC 9449) that this client does not hold: no prover is configured, or the
    /// token names another key. Nothing was sent.
    public static let dpopKeyUnavailable = NetworkRetryError(.dpopKeyUnavailable)
    /// The server rejected the request's DPoP proof (`invalid_dpop_proof`), or asked for a nonce again after the
    /// call's one retry.
    public static let dpopProofRejected = NetworkRetryError(.dpopProofRejected)

    /// Wraps an error thrown by an HTTP client as ``transport``.
    ///
    /// - Parameter underlying: The client's error.
    /// - Returns: ``transport`` carrying `underlying`.
    package static func transport(_ underlying: any Error) -> NetworkRetryError {
        NetworkRetryError(.transport, underlying: underlying)
    }

    /// Returns this error with the cause attached. Public for transports (an ``HTTPTransport`` outside this
    /// package wraps its client's error as ``timedOut`` or ``cannotConnect`` with the cause).
    ///
    /// - Parameter underlying: The error the HTTP client threw.
    /// - Returns: The same error carrying `underlying`.
    public func with(underlying: any Error) -> NetworkRetryError {
        NetworkRetryError(code, underlying: underlying, challenge: challenge, status: status)
    }

    /// Returns this error with the response status and the server's challenge attached.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - challenge: The Bearer challenge, if the server sent one.
    /// - Returns: The same error with the details.
    package func with(status: Int, challenge: BearerChallenge?) -> NetworkRetryError {
        NetworkRetryError(code, underlying: underlying, challenge: challenge, status: status)
    }

    /// One error of each code, for the tests that check every code has its messages.
    package static var everyCode: [NetworkRetryError] { Code.allCases.map { NetworkRetryError($0) } }
    /// The key of the error's message in the translations: `NetworkRetryError.<code>`.
    package var messageKey: String { "NetworkRetryError.\(code.rawValue)" }

    /// Two errors are equal when their codes are, whatever they carry.
    public static func == (lhs: NetworkRetryError, rhs: NetworkRetryError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `NetworkRetryError.<code>`, with the status if known; never header values, tokens or the cause's text.
    public var description: String {
        "NetworkRetryError.\(code.rawValue)" + (status.map { " (status \($0))" } ?? "")
    }
}
