public import AuthToken
public import Foundation
import HTTPTypes
public import NetworkRetry

/// A cookie session (BetterAuth, Django, Rails): the credential is an HttpOnly session cookie that TokenKit
/// captures at sign-in, stores like any other secret, and presents as `Cookie` only where it belongs (use
/// ``presentation`` on the ``/NetworkRetry/AuthenticatedClient``).
///
/// The cookie goes only within its own scope (RFC 6265) and the client's allowed origins. A cookie cannot be refreshed:
/// its "refresh" is a check of the session with the server, which keeps it, renews it or ends it once. The scope and
/// the check in full: <doc:CookieSessionRules>.
///
/// ```swift
/// let cookie = CookieSessionStrategy(baseURL: URL(string: "https://api.example.com")!, transport: transport)
/// let auth = TokenRefreshClient(strategy: cookie, store: store)
/// try await auth.signIn(cookie.signIn(path: "/api/auth/sign-in/username", body: credentialsJSON))
/// let api = AuthenticatedClient(
///     transport: transport, tokenProvider: auth,
///     configuration: .init(allowedOrigins: [origin], credentialPresentation: cookie.presentation))
/// ```
public struct CookieSessionStrategy: RefreshStrategy {
    /// The server's base URL.
    package let baseURL: URL
    /// The session cookie's name; `better-auth.session_token` by default.
    package let cookieName: String
    /// The session check's path; `/api/auth/get-session` by default.
    package let sessionPath: String
    /// The transport (cookies are never left to it: ``/NetworkRetry/URLSessionTransport`` keeps them off).
    package let transport: any HTTPTransport
    /// The wall clock.
    package let now: @Sendable () -> Date
    /// Whether the base URL may be plain `http` to a host that is not loopback; `false` by default (sign-in and
    /// session checks then fail with ``TokenRefreshError/insecureEndpoint`` before anything is sent).
    package let dangerouslyAllowsPlainHTTP: Bool
    /// The captured cookie's scope, which ``presentation`` follows.
    package let cookieScope: SessionCookieScope

    /// Creates the strategy.
    ///
    /// - Parameters:
    ///   - baseURL: The server's base URL.
    ///   - cookieName: The session cookie's name.
    ///   - sessionPath: The session check's path.
    ///   - transport: The transport.
    ///   - now: The wall clock.
    ///   - dangerouslyAllowsPlainHTTP: Whether plain `http` to a host that is not loopback is allowed; `false` by
    ///     default. Turn it on only inside a network you trust end to end.
    public init(
        baseURL: URL, cookieName: String = "better-auth.session_token", sessionPath: String = "/api/auth/get-session",
        transport: any HTTPTransport, now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        dangerouslyAllowsPlainHTTP: Bool = false
    ) {
        self.baseURL = baseURL
        self.cookieName = cookieName
        self.sessionPath = sessionPath
        self.transport = transport
        self.now = now
        self.dangerouslyAllowsPlainHTTP = dangerouslyAllowsPlainHTTP
        cookieScope = SessionCookieScope(
            CookieScope(domain: baseURL.host ?? "", isSecure: baseURL.scheme?.lowercased() == "https"))
    }

    /// `true`: the "refresh" is the session check, run at launch even while the cookie looks fresh.
    public var checksSessionWithServer: Bool { true }

    /// The presentation to configure on the ``/NetworkRetry/AuthenticatedClient``: the cookie, only on requests
    /// in its scope (`cookieScope`).
    public var presentation: CredentialPresentation { .cookie(named: cookieName, scope: cookieScope) }

    /// Checks the session with the server (see the type's discussion).
    ///
    /// - Parameter refreshToken: The stored cookie value.
    /// - Returns: The (possibly renewed) cookie with the session's expiry.
    /// - Throws: ``TokenRefreshError/sessionInvalidated`` when the session is gone; transient errors otherwise.
    public func refresh(using refreshToken: String?) async throws -> TokenResponse {
        guard let cookie = refreshToken, !cookie.isEmpty else { throw TokenRefreshError.missingRefreshToken }
        var headers = HTTPFields()
        headers[.accept] = "application/json"
        headers[.cookie] = cookieName + "=" + cookie
        let request = try HTTPRequest.get(
            url(sessionPath), headers: headers, allowingPlainHTTP: dangerouslyAllowsPlainHTTP)
        let (response, body) = try await TokenEndpoint.send(request, body: Data(), via: transport)
        let status = response.status.code
        if status == 401 { throw TokenRefreshError.sessionInvalidated.with(status: status) }
        guard (200..<300).contains(status) else {
            throw TokenEndpoint.classify(response, body: body, isSignIn: false, now: now)
        }
        guard let session = CookieSessionAnswer(body) else {
            throw TokenRefreshError.malformedResponse.with(status: status)
        }
        guard case .session(let expiresAt, let userID) = session else {
            throw TokenRefreshError.sessionInvalidated.with(status: status)
        }
        let renewed = captured(from: response) ?? (value: cookie, expiresAt: nil)
        return tokenResponse(cookie: renewed.value, expiresAt: expiresAt ?? renewed.expiresAt, userID: userID)
    }

    /// A sign-up or sign-in at `path` with a JSON `body` (BetterAuth's `/api/auth/sign-in/username`,
    /// `/api/auth/sign-up/email`): the session cookie is captured from `Set-Cookie`.
    ///
    /// - Parameters:
    ///   - path: The route.
    ///   - body: The JSON body (credentials: sent once, never kept or logged).
    /// - Returns: The grant. It throws ``TokenRefreshError/signInRejected`` on a 4xx, with the server's
    ///   `{"error": ...}` answer as its ``TokenRefreshError/underlying`` ``AuthServerError`` (known texts only:
    ///   "Username already exists" stays tellable from "Invalid credentials"; other text is dropped), and
    ///   ``TokenRefreshError/malformedResponse`` when no acceptable session cookie came back.
    public func signIn(path: String, body: Data) -> SignInGrant {
        .custom {
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.accept] = "application/json"
            let request = try HTTPRequest.post(
                url(path), headers: headers, allowingPlainHTTP: dangerouslyAllowsPlainHTTP)
            let (response, data) = try await TokenEndpoint.send(request, body: body, via: transport)
            let status = response.status.code
            guard (200..<300).contains(status) else {
                if (400..<500).contains(status) && status != 408 && status != 429 {
                    let rejected = TokenRefreshError.signInRejected.with(status: status)
                    guard let answer = AuthServerError(status: status, body: data) else { throw rejected }
                    throw rejected.with(underlying: answer)
                }
                throw TokenEndpoint.classify(response, body: data, isSignIn: true, now: now)
            }
            guard let cookie = captured(from: response) else {
                throw TokenRefreshError.malformedResponse.with(status: status)
            }
            let userID: String? =
                if case .session(_, let id)? = CookieSessionAnswer(data) { id } else {
                    CookieSessionAnswer.userID(data)
                }
            return self.tokenResponse(cookie: cookie.value, expiresAt: cookie.expiresAt, userID: userID)
        }
    }

    /// The session cookie in `response`'s `Set-Cookie` fields, if one is there and acceptable.
    func captured(from response: HTTPResponse) -> (value: String, expiresAt: Date?)? {
        let host = baseURL.host ?? ""
        let secure = HTTPOrigin(scheme: baseURL.scheme ?? "", host: host)?.allowsCredentials ?? false
        for field in response.headerFields[values: .setCookie] {
            guard let cookie = try? SetCookie(parsing: field, requestHost: host, requestIsSecure: secure, now: now()),
                cookie.name == cookieName, !cookie.value.isEmpty, !cookie.isExpired(at: now())
            else { continue }
            cookieScope.update(CookieScope(cookie))
            return (cookie.value, cookie.expiresAt)
        }
        return nil
    }

    private func tokenResponse(cookie: String, expiresAt: Date?, userID: String?) -> TokenResponse {
        let lifetime = expiresAt.map { max(0, $0.timeIntervalSince(now())) }
        return TokenResponse(
            accessToken: cookie, refreshToken: cookie, tokenType: "session-cookie", expiresIn: lifetime, userID: userID)
    }

    private func url(_ path: String) -> URL {
        URL(string: path, relativeTo: baseURL)?.absoluteURL ?? baseURL
    }
}

/// What a session check answered: a session (BetterAuth's `{"session": {...}, "user": {...}}`) or `null`.
enum CookieSessionAnswer {
    case session(expiresAt: Date?, userID: String?)
    case none

    init?(_ body: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else {
            return nil
        }
        if object is NSNull {
            self = .none
            return
        }
        guard let root = object as? [String: Any] else { return nil }
        guard let session = root["session"] as? [String: Any] else {
            self = .none
            return
        }
        let expiry = (session["expiresAt"] as? String).flatMap(Self.date)
        let user = (root["user"] as? [String: Any])?["id"] as? String ?? session["userId"] as? String
        self = .session(expiresAt: expiry, userID: user)
    }

    static func userID(_ body: Data) -> String? {
        guard let root = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else { return nil }
        return (root["user"] as? [String: Any])?["id"] as? String
    }

    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

extension HTTPRequest {
    /// A GET to `url`, which must be absolute with a host, and `https` or `http` to loopback unless
    /// `allowingPlainHTTP`.
    static func get(
        _ url: URL, headers: HTTPFields, allowingPlainHTTP: Bool = false
    ) throws(TokenRefreshError) -> HTTPRequest {
        var request = try post(url, headers: headers, allowingPlainHTTP: allowingPlainHTTP)
        request.method = .get
        return request
    }
}
