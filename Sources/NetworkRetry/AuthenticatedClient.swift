import AuthToken
public import Foundation
public import HTTPTypes
public import Logging

/// Sends requests with `Authorization: Bearer`, refreshing the token once after a 401.
///
/// ```swift
/// let client = AuthenticatedClient(
///     transport: URLSessionTransport(),
///     tokenProvider: refreshClient,
///     configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!]))
/// let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/me")
/// let (response, body) = try await client.executeWithAutoRetry(request)
/// ```
///
/// A token goes only to a configured origin over `https` (or `http` to loopback), and never past a redirect that left
/// that origin; there is at most one refresh and one retry per call; a 401 is never returned; the refresh token never
/// travels through this path. Each step, redirects, errors and logging: <doc:SendingAuthenticatedRequests>.
public struct AuthenticatedClient: HTTPTransport {
    /// Options for an ``AuthenticatedClient``.
    public struct Configuration: Sendable {
        /// The origins a token may be sent to. A request to any other origin is refused before sending.
        public var allowedOrigins: Set<HTTPOrigin>
        /// Whether the client follows 3xx responses with a `Location` (<doc:SendingAuthenticatedRequests>).
        public var followsRedirects: Bool
        /// The most redirects one call follows before throwing ``NetworkRetryError/tooManyRedirects``.
        public var maximumRedirects: Int
        /// Whether a 401 that a refresh did not cure ends the session (the token provider's
        /// ``TokenProvider/sessionRejected(afterRefreshOf:endSession:)`` is told either way), like a global 401
        /// handler that clears the session and shows the login screen. `false` by default: the session is kept
        /// and the call throws ``NetworkRetryError/unauthorizedAfterRefresh``.
        public var endsSessionWhenRefreshDoesNotHelp: Bool
        /// How the credential travels: `Authorization: Bearer` (the default) or a session cookie.
        public var credentialPresentation: CredentialPresentation
        /// Header fields that carry secrets of the app's own (an API key): removed, like `Authorization`, `Cookie`
        /// and `Proxy-Authorization`, from every hop after a redirect has left the origin.
        /// ``defaultSecretHeaderFields`` by default; add the app's own.
        public var secretHeaderFields: Set<HTTPField.Name>
        /// The session's DPoP prover (RFC 9449), for tokens of type `DPoP`: such a token goes as
        /// `Authorization: DPoP <token>` with a proof, and a nonce challenge is answered within the call's one retry.
        /// `nil` by default: a `DPoP` token is then never sent (``NetworkRetryError/dpopKeyUnavailable``).
        public var dpop: DPoPProver?

        /// `X-API-Key`, `API-Key`, `X-Auth-Token`, `X-Access-Token`, `X-Refresh-Token`, `X-Session-Token`,
        /// `X-CSRF-Token` and `X-XSRF-Token`.
        public static let defaultSecretHeaderFields: Set<HTTPField.Name> = Set(
            [
                "X-API-Key", "API-Key", "X-Auth-Token", "X-Access-Token", "X-Refresh-Token", "X-Session-Token",
                "X-CSRF-Token", "X-XSRF-Token",
            ].compactMap { HTTPField.Name($0) })

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - allowedOrigins: The origins a token may be sent to.
        ///   - followsRedirects: Whether to follow redirects; defaults to `true`.
        ///   - maximumRedirects: The redirect cap; defaults to 5.
        ///   - endsSessionWhenRefreshDoesNotHelp: Whether a 401 after a refresh ends the session; `false` by
        ///     default.
        ///   - credentialPresentation: How the credential travels; `Authorization: Bearer` by default.
        ///   - secretHeaderFields: Header fields removed once a redirect leaves the origin;
        ///     ``defaultSecretHeaderFields`` by default.
        ///   - dpop: The session's DPoP prover, for tokens of type `DPoP`; `nil` by default.
        public init(
            allowedOrigins: some Sequence<HTTPOrigin>, followsRedirects: Bool = true, maximumRedirects: Int = 5,
            endsSessionWhenRefreshDoesNotHelp: Bool = false, credentialPresentation: CredentialPresentation = .bearer,
            secretHeaderFields: Set<HTTPField.Name> = Configuration.defaultSecretHeaderFields, dpop: DPoPProver? = nil
        ) {
            self.dpop = dpop
            self.allowedOrigins = Set(allowedOrigins)
            self.followsRedirects = followsRedirects
            self.maximumRedirects = max(0, maximumRedirects)
            self.endsSessionWhenRefreshDoesNotHelp = endsSessionWhenRefreshDoesNotHelp
            self.credentialPresentation = credentialPresentation
            self.secretHeaderFields = secretHeaderFields
        }
    }

    /// The logger used when none is given: label `TokenKit.NetworkRetry`.
    @usableFromInline package static let defaultLogger = Logger(label: "TokenKit.NetworkRetry")

    /// The transport requests go through.
    package let transport: any HTTPTransport
    /// Where tokens come from.
    package let tokenProvider: any TokenProvider
    /// The options.
    package let configuration: Configuration
    /// The logger (debug and trace only).
    package let logger: Logger
    private let authorizationCache: AuthorizationFieldCache
    /// The allowed origins that may carry a token, keyed by their usual spellings (`host`, `host:port`).
    private let verbatimOrigins: [VerbatimOrigin]

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - transport: The transport to send through.
    ///   - tokenProvider: Hands out and refreshes tokens.
    ///   - configuration: Allowed origins and redirect policy.
    ///   - logger: Where to log; defaults to a logger labelled `TokenKit.NetworkRetry`.
    public init(
        transport: any HTTPTransport, tokenProvider: any TokenProvider, configuration: Configuration,
        logger: Logger = AuthenticatedClient.defaultLogger
    ) {
        self.transport = transport
        self.tokenProvider = tokenProvider
        self.configuration = configuration
        self.logger = logger
        self.authorizationCache = AuthorizationFieldCache(presentation: configuration.credentialPresentation)
        var verbatim: [VerbatimOrigin] = []
        // Only the first few origins get a fast path; the rest are parsed and looked up in the set.
        for origin in configuration.allowedOrigins.prefix(8) where origin.allowsCredentials {
            if origin.port == (origin.isSecure ? 443 : 80) {
                verbatim.append(VerbatimOrigin(scheme: origin.scheme, authority: origin.host, origin: origin))
            }
            verbatim.append(
                VerbatimOrigin(scheme: origin.scheme, authority: "\(origin.host):\(origin.port)", origin: origin))
        }
        self.verbatimOrigins = verbatim
    }

    /// The same as ``executeWithAutoRetry(_:body:)``, so the client can stand in for a plain transport.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute URL.
    ///   - body: The request body, replayed on a retry.
    /// - Returns: The final response and its body; never a 401.
    /// - Throws: ``NetworkRetryError``, an error of the token provider, or `CancellationError`.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        try await executeWithAutoRetry(request, body: body)
    }

    /// Sends `request` with a Bearer token, refreshing and retrying once after a 401 that a refresh can fix.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute URL (scheme and authority) on a configured origin.
    ///   - body: The request body, replayed on a retry.
    /// - Returns: The final response and its body; never a 401.
    /// - Throws: ``NetworkRetryError``, an error of the token provider, or `CancellationError`.
    public func executeWithAutoRetry(_ request: HTTPRequest, body: Data? = nil) async throws -> (HTTPResponse, Data) {
        let origin = try checkedOrigin(of: request)

        var token = try await tokenProvider.validToken()
        var attempts = RequestRetryMachine()
        var redirects = 0
        var hop = request
        var hopBody = body
        var onOrigin = true
        while true {
            guard !token.accessToken.isEmpty else { throw NetworkRetryError.noToken }
            var outgoing = hop
            // A scoped cookie goes only where its own Domain, Path and Secure allow, even on an allowed origin.
            let attaches = onOrigin && configuration.credentialPresentation.applies(to: hop)
            let dpop = attaches && isDPoPTokenType(token.tokenType) ? configuration.dpop : nil
            if attaches && isDPoPTokenType(token.tokenType) {
                // A token bound to a key goes only with a proof of that key, never as a Bearer token.
                guard let dpop else { throw NetworkRetryError.dpopKeyUnavailable }
                try dpop.checkBinding(of: token.accessToken)
                outgoing.headerFields[.authorization] = nil
                outgoing.headerFields.append(dpop.authorizationField(for: token.accessToken))
                outgoing.headerFields[.dpop] = try dpop.proof(
                    method: hop.method.rawValue, origin: origin, path: hop.path ?? "/", accessToken: token.accessToken)
            } else if attaches {
                let field = authorizationCache.field(for: token.accessToken)
                if field.name == .authorization {
                    if outgoing.headerFields[.authorization] != nil { outgoing.headerFields[.authorization] = nil }
                    outgoing.headerFields.append(field)
                } else if let cookies = outgoing.headerFields[.cookie] {
                    // One Cookie line (RFC 6265 section 5.4): the caller's cookies, then the session's.
                    outgoing.headerFields[.cookie] = cookies + "; " + field.value
                } else {
                    outgoing.headerFields.append(field)
                }
            } else if !onOrigin {
                outgoing.headerFields[.authorization] = nil
                outgoing.headerFields[.cookie] = nil
                outgoing.headerFields[.proxyAuthorization] = nil
                for name in configuration.secretHeaderFields where outgoing.headerFields[name] != nil {
                    outgoing.headerFields[name] = nil
                }
            }
            let (response, data) = try await exchange(outgoing, body: hopBody, token: attaches ? token : nil)
            let code = response.status.code
            // Every answer from the origin may carry the server's next nonce, 200s included.
            let learnedNonce =
                onOrigin ? configuration.dpop?.learnNonce(from: response, origin: origin) ?? false : false

            let rejection: RequestRetryMachine.Rejection
            if let dpop, code == 401 {
                rejection = Self.dpopRejection(
                    response, code: code, token: token, learnedNonce: learnedNonce, now: dpop.now)
            } else {
                switch RetryDecision(
                    code: code, response: response, requestCarriedToken: attaches,
                    alreadyRefreshed: attempts.hasRefreshed)
                {
                case .fail(let error): rejection = .final(error)
                case .refreshAndRetry: rejection = .tokenRejected
                case .deliver: rejection = .none
                }
            }
            switch attempts.answered(rejection) {
            case .fail(var error):
                if error.status == nil { error = error.with(status: code, challenge: error.challenge) }
                logger.trace("request rejected", metadata: ["error": "\(error)"])
                if error == .unauthorizedAfterRefresh {
                    await tokenProvider.sessionRejected(
                        afterRefreshOf: token.accessToken, endSession: configuration.endsSessionWhenRefreshDoesNotHelp)
                }
                throw error
            case .retry(let refreshingFirst):
                if refreshingFirst {
                    logger.trace("refreshing after 401", metadata: ["token": "\(token.fingerprint)"])
                    token = try await tokenProvider.refreshToken(afterRejectionOf: token.accessToken)
                } else {
                    logger.trace("retrying with the server's DPoP nonce", metadata: ["token": "\(token.fingerprint)"])
                }
                continue
            case .deliver:
                break
            }

            guard configuration.followsRedirects, (300..<400).contains(code),
                let next = redirect(from: hop, body: hopBody, code: code, response: response)
            else { return (response, data) }
            redirects += 1
            guard redirects <= configuration.maximumRedirects else { throw NetworkRetryError.tooManyRedirects }
            let (nextRequest, nextBody) = try next.get()
            // Once a hop has left the origin, no later hop of this call carries credentials, even one that
            // comes back: whoever controls the middle hop must not choose which authenticated request is made.
            let nextOnOrigin = onOrigin && HTTPOrigin(nextRequest) == origin
            // A body (a password, an upload) is never replayed to another origin: the redirect is handed back.
            if !nextOnOrigin, let nextBody, !nextBody.isEmpty {
                logger.trace("not following a redirect that would carry the body away", metadata: ["status": "\(code)"])
                return (response, data)
            }
            hop = nextRequest
            hopBody = nextBody
            onOrigin = nextOnOrigin
            logger.trace(
                "following redirect", metadata: ["status": "\(code)", "sameOrigin": "\(onOrigin)"])
        }
    }

    /// How a 401 to a request that carried a `DPoP` token reads (RFC 9449 sections 7.1 and 9).
    ///
    /// - Parameters:
    ///   - learnedNonce: Whether the answer carried a nonce other than the one the request used.
    ///   - now: The prover's clock, to judge whether the token has expired.
    static func dpopRejection(
        _ response: HTTPResponse, code: Int, token: AuthToken, learnedNonce: Bool, now: @Sendable () -> Date
    ) -> RequestRetryMachine.Rejection {
        var challenges: [AuthenticationChallenge] = []
        for value in response.headerFields[values: .wwwAuthenticate] {
            challenges += AuthenticationChallenge.parse(value) ?? []
        }
        let errors = Set(challenges.filter { $0.isScheme("DPoP") }.map { $0[parameter: "error"] ?? "" })
        guard !errors.isEmpty else {
            // No DPoP challenge: the Bearer rules (no challenge at all: refresh and retry).
            switch RetryDecision(code: code, response: response, requestCarriedToken: true, alreadyRefreshed: false) {
            case .fail(let error): return .final(error)
            case .refreshAndRetry: return .tokenRejected
            case .deliver: return .none
            }
        }
        if errors.contains("use_dpop_nonce") {
            // A challenge without a new nonce cannot be answered: sending again would repeat the same proof.
            guard learnedNonce else {
                return .final(NetworkRetryError.dpopProofRejected.with(status: code, challenge: nil))
            }
            return .nonceChallenge(tokenStale: errors.contains("invalid_token") || token.isExpired(at: now()))
        }
        if errors.contains("invalid_dpop_proof") {
            return .final(NetworkRetryError.dpopProofRejected.with(status: code, challenge: nil))
        }
        if errors.contains("insufficient_scope") {
            return .final(NetworkRetryError.insufficientScope.with(status: code, challenge: nil))
        }
        if errors.contains("invalid_request") {
            return .final(NetworkRetryError.unauthorized.with(status: code, challenge: nil))
        }
        return .tokenRejected
    }

    /// The request's origin, if a token may go there; otherwise the error that says why not.
    private func checkedOrigin(of request: HTTPRequest) throws(NetworkRetryError) -> HTTPOrigin {
        // A path that does not start with "/" would change the authority once written after it.
        guard HTTPOrigin.isValidRequestTarget(request.path ?? "/", method: request.method.rawValue) else {
            throw .invalidRequest
        }
        // Fast path: the scheme and authority exactly as an allowed, credential-safe origin is usually written.
        // A linear scan: comparing two short strings is cheaper than hashing them, and lists are short.
        if let scheme = request.scheme, let authority = request.authority {
            for entry in verbatimOrigins where entry.authority == authority && entry.scheme == scheme {
                return entry.origin
            }
        }
        guard let origin = HTTPOrigin(request) else { throw .invalidRequest }
        guard configuration.allowedOrigins.contains(origin) else { throw .originNotAllowed }
        guard origin.allowsCredentials else { throw .insecureTransport }
        return origin
    }

    /// Sends one request through the transport, mapping its errors, and logs the exchange.
    @inline(__always)
    private func exchange(_ request: HTTPRequest, body: Data?, token: AuthToken?) async throws -> (HTTPResponse, Data) {
        let result: (HTTPResponse, Data)
        do {
            result = try await transport.send(request, body: body)
        } catch let error as NetworkRetryError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw NetworkRetryError.transport(error)
        }
        logger.debug(
            "exchange",
            metadata: [
                "http.method": "\(request.method.rawValue)",
                "http.path": "\(Self.pathWithoutQuery(request.path))",
                "http.status": "\(result.0.status.code)",
                "token": "\(token?.fingerprint ?? "none")",
            ])
        return result
    }

    /// The next hop of a redirect, or `nil` when `response` is not one to follow.
    private func redirect(
        from request: HTTPRequest, body: Data?, code: Int, response: HTTPResponse
    ) -> Result<(HTTPRequest, Data?), NetworkRetryError>? {
        switch code {
        case 301, 302, 303, 307, 308: break
        default: return nil
        }
        guard let location = response.headerFields[.location], let scheme = request.scheme,
            let authority = request.authority,
            let base = URL(string: "\(scheme)://\(authority)\(request.path ?? "/")"),
            let target = URL(string: location, relativeTo: base),
            let components = URLComponents(url: target, resolvingAgainstBaseURL: true),
            let targetScheme = components.scheme?.lowercased(), targetScheme == "http" || targetScheme == "https",
            var host = components.percentEncodedHost, !host.isEmpty
        else { return .failure(.invalidRedirect) }
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }
        let targetAuthority = host + (components.port.map { ":\($0)" } ?? "")
        let path =
            (components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath)
            + (components.percentEncodedQuery.map { "?" + $0 } ?? "")

        var next = request
        next.scheme = targetScheme
        next.authority = targetAuthority
        next.path = path
        var nextBody = body
        if code == 303 && request.method != .head || (code == 301 || code == 302) && request.method == .post {
            next.method = .get
            nextBody = nil
            next.headerFields[.contentLength] = nil
            next.headerFields[.contentType] = nil
        }
        return .success((next, nextBody))
    }

    private static func pathWithoutQuery(_ path: String?) -> Substring {
        guard let path else { return "" }
        return path[..<(path.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? path.endIndex)]
    }
}

extension AuthenticatedClient: CustomReflectable {
    /// The configuration and the types of the transport and token provider; never a token (the cached
    /// `Authorization` field is not shown).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "allowedOrigins": configuration.allowedOrigins.map(\.description).sorted(),
                "followsRedirects": configuration.followsRedirects,
                "maximumRedirects": configuration.maximumRedirects,
                "secretHeaderFields": configuration.secretHeaderFields.map(\.canonicalName).sorted(),
                "transport": String(describing: type(of: transport)),
                "tokenProvider": String(describing: type(of: tokenProvider)),
            ],
            displayStyle: .struct)
    }
}

/// Sends `request` with a Bearer token from `tokenProvider`, refreshing and retrying once after a 401 that a
/// refresh can fix. The FitIQ and Lume apps' name for ``AuthenticatedClient/executeWithAutoRetry(_:body:)``; keep an
/// ``AuthenticatedClient`` around instead when sending many requests.
///
/// - Parameters:
///   - request: The request, with an absolute URL on a configured origin.
///   - body: The request body, replayed on a retry.
///   - transport: The transport to send through.
///   - tokenProvider: Hands out and refreshes tokens.
///   - configuration: Allowed origins and redirect policy.
///   - logger: Where to log; defaults to a logger labelled `TokenKit.NetworkRetry`.
/// - Returns: The final response and its body; never a 401.
/// - Throws: ``NetworkRetryError``, an error of the token provider, or `CancellationError`.
package func executeWithAutoRetry(
    _ request: HTTPRequest, body: Data? = nil, transport: any HTTPTransport, tokenProvider: any TokenProvider,
    configuration: AuthenticatedClient.Configuration, logger: Logger = AuthenticatedClient.defaultLogger
) async throws -> (HTTPResponse, Data) {
    try await AuthenticatedClient(
        transport: transport, tokenProvider: tokenProvider, configuration: configuration, logger: logger
    ).executeWithAutoRetry(request, body: body)
}

/// Remembers the `Authorization` field built for the last token: building an `HTTPField` checks every byte of
/// the value, which for an 800-byte JWT was the largest cost of a request. `@unchecked Sendable`: `entry` is
/// only touched while holding `lock`.
final class AuthorizationFieldCache: @unchecked Sendable, CustomReflectable {
    private let lock = NSLock()
    private var entry: (accessToken: String, field: HTTPField)?
    private let presentation: CredentialPresentation

    init(presentation: CredentialPresentation = .bearer) {
        self.presentation = presentation
    }

    /// The `Authorization: Bearer` (or `Cookie`) field for `accessToken`.
    func field(for accessToken: String) -> HTTPField {
        lock.lock()
        defer { lock.unlock() }
        if let entry, entry.accessToken == accessToken { return entry.field }
        let field = presentation.field(for: accessToken)
        entry = (accessToken, field)
        return field
    }

    /// Nothing: the cached field holds a token.
    var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// How ``AuthenticatedClient`` presents the credential: the one thing that differs between a Bearer token and
/// a cookie session. Everything else (origins, https, redirects, the refresh and retry after a 401) is the same.
public struct CredentialPresentation: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Hashable {
        case bearer
        case cookie(String)
        case scopedCookie(String, ObjectIdentifier)
    }
    private let kind: Kind
    private let scope: SessionCookieScope?

    /// `Authorization: Bearer <token>` (RFC 6750).
    public static let bearer = CredentialPresentation(kind: .bearer, scope: nil)

    /// `Cookie: <name>=<token>`: a session cookie the client owns (never a global cookie jar), sent to every
    /// allowed origin whatever the cookie's own scope. Other cookies of the request are kept on the origin and,
    /// like it, dropped once a redirect leaves the origin. Prefer `cookie(named:scope:)`, which a
    /// `CookieSessionStrategy` hands out.
    ///
    /// - Parameter name: The cookie's name (`better-auth.session_token`).
    /// - Returns: The presentation.
    public static func cookie(named name: String) -> CredentialPresentation {
        CredentialPresentation(kind: .cookie(name), scope: nil)
    }

    /// `Cookie: <name>=<token>`, only on requests in the cookie's scope (RFC 6265 section 5.4): its domain
    /// (host-only unless it had a `Domain`), its path, and https when it is `Secure`. A request on an allowed
    /// origin outside the scope goes without the cookie (and a 401 to it causes no refresh).
    ///
    /// - Parameters:
    ///   - name: The cookie's name.
    ///   - scope: The scope, kept current by whoever captures the cookie.
    /// - Returns: The presentation.
    package static func cookie(named name: String, scope: SessionCookieScope) -> CredentialPresentation {
        CredentialPresentation(kind: .scopedCookie(name, ObjectIdentifier(scope)), scope: scope)
    }

    /// Whether the credential goes with `request` (already on an allowed origin): always for a Bearer token
    /// and an unscoped cookie; for a scoped cookie, when the request is in its scope.
    ///
    /// - Parameter request: The request.
    /// - Returns: Whether to attach the credential.
    package func applies(to request: HTTPRequest) -> Bool {
        scope?.current.matches(request) ?? true
    }

    /// Equal when the kinds (and, for a scoped cookie, the scope holders) are.
    ///
    /// - Parameters:
    ///   - lhs: A presentation.
    ///   - rhs: Another.
    /// - Returns: Whether they are the same.
    public static func == (lhs: CredentialPresentation, rhs: CredentialPresentation) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// The cookie's name, for a cookie presentation.
    package var cookieName: String? {
        switch kind {
        case .bearer: nil
        case .cookie(let name), .scopedCookie(let name, _): name
        }
    }

    /// The header field carrying `credential`.
    ///
    /// - Parameter credential: The access token or cookie value.
    /// - Returns: The field.
    package func field(for credential: String) -> HTTPField {
        switch kind {
        case .bearer: HTTPField(name: .authorization, value: "Bearer " + credential)
        case .cookie(let name), .scopedCookie(let name, _): HTTPField(name: .cookie, value: name + "=" + credential)
        }
    }

    /// `bearer` or `cookie(<name>)`.
    public var description: String {
        switch kind {
        case .bearer: "bearer"
        case .cookie(let name): "cookie(\(name))"
        case .scopedCookie(let name, _): "cookie(\(name), \(scope.map { "\($0)" } ?? ""))"
        }
    }
}

/// A scheme and authority exactly as a request usually spells an allowed origin.
struct VerbatimOrigin: Sendable {
    let scheme: String
    let authority: String
    let origin: HTTPOrigin
}
