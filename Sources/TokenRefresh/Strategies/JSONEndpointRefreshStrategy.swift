public import AuthToken
public import Foundation
import HTTPTypes
public import NetworkRetry

/// A JSON refresh endpoint in the FitIQ style: `POST /api/v1/auth/refresh` with
/// `{"refreshToken": "..."}` (what the FitIQ app's `RefreshTokenRequest` encodes with a default `JSONEncoder`) and
/// an `X-API-Key` header, answered with a token body in camelCase or snake_case keys, optionally wrapped in
/// `data` (the app decodes it with `.convertFromSnakeCase`, which accepts both).
///
/// For a backend that wants `{"refresh_token": "..."}`, pass `"refresh_token"` as `refreshTokenKey`.
///
/// A 401 without an OAuth error code means the refresh token was rejected (the session is over); a 403
/// means the API key is wrong (a configuration error, nothing is wiped).
public struct JSONEndpointRefreshStrategy: RefreshStrategy {
    /// The refresh endpoint URL.
    package let url: URL
    /// The API key sent as `X-API-Key`, if any. Never logged.
    package let apiKey: String?
    /// The transport.
    package let transport: any HTTPTransport
    /// The wall clock, for `Retry-After` given as an HTTP date.
    package let now: @Sendable () -> Date
    /// The JSON key the refresh token is sent under: `refreshToken` by default.
    package let refreshTokenKey: String
    /// Whether the endpoint may be plain `http` to a host that is not loopback; `false` by default (a refresh is
    /// then refused with ``TokenRefreshError/insecureEndpoint`` before anything is sent).
    package let dangerouslyAllowsPlainHTTP: Bool

    /// `refreshToken`, the key the FitIQ and Lume backends read (the default).
    @usableFromInline package static let camelCaseRefreshTokenKey = "refreshToken"
    /// `refresh_token`, for backends that want snake_case request bodies.
    package static let snakeCaseRefreshTokenKey = "refresh_token"

    /// Creates the strategy.
    ///
    /// - Parameters:
    ///   - baseURL: The API's base URL; the path `/api/v1/auth/refresh` is appended unless `path` says otherwise.
    ///   - path: The refresh path.
    ///   - apiKey: The API key for `X-API-Key`.
    ///   - transport: The transport.
    ///   - refreshTokenKey: The JSON key of the refresh token in the request body; `refreshToken` by
    ///     default.
    ///   - now: The wall clock.
    ///   - dangerouslyAllowsPlainHTTP: Whether plain `http` to a host that is not loopback is allowed; `false` by
    ///     default.
    public init(
        baseURL: URL, path: String = "/api/v1/auth/refresh", apiKey: String?, transport: any HTTPTransport,
        refreshTokenKey: String = JSONEndpointRefreshStrategy.camelCaseRefreshTokenKey,
        now: @escaping @Sendable () -> Date = AuthToken.systemNow, dangerouslyAllowsPlainHTTP: Bool = false
    ) {
        var text = baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        self.url = URL(string: text + (path.hasPrefix("/") ? path : "/" + path)) ?? baseURL
        self.apiKey = apiKey
        self.transport = transport
        self.now = now
        self.refreshTokenKey = refreshTokenKey
        self.dangerouslyAllowsPlainHTTP = dangerouslyAllowsPlainHTTP
    }

    /// Posts the refresh token as JSON, `{"<refreshTokenKey>": "..."}`.
    ///
    /// - Parameter refreshToken: The refresh token.
    /// - Returns: The token response.
    /// - Throws: ``TokenRefreshError/missingRefreshToken`` without one; otherwise the classified answer.
    public func refresh(using refreshToken: String?) async throws -> TokenResponse {
        guard let refreshToken, !refreshToken.isEmpty else { throw TokenRefreshError.missingRefreshToken }
        let (response, data) = try await post([refreshTokenKey: refreshToken], to: url)
        if response.status.code == 403 && TokenResponse.oauthErrorCode(data) == nil {
            throw TokenRefreshError.configuration.with(status: 403)
        }
        return try TokenEndpoint.interpret(
            response, body: data, isSignIn: false, now: now, rejectionWithoutCode: .refreshTokenRejected)
    }

    /// The FitIQ-style login: `POST` of `{"email", "password"}` to `loginURL`, with the same headers as a refresh.
    ///
    /// - Parameters:
    ///   - loginURL: The login endpoint.
    ///   - email: The user's email.
    ///   - password: The password: sent once, never kept or logged.
    /// - Returns: The grant; it throws ``TokenRefreshError/signInRejected`` for a 401 without an OAuth error code.
    package func signIn(at loginURL: URL, email: String, password: String) -> SignInGrant {
        .custom {
            let (response, data) = try await post(["email": email, "password": password], to: loginURL)
            return try TokenEndpoint.interpret(
                response, body: data, isSignIn: true, now: now, rejectionWithoutCode: .signInRejected)
        }
    }

    /// Posts `fields` as a JSON object to `target`, with `X-API-Key` when there is a key.
    private func post(_ fields: [String: String], to target: URL) async throws -> (HTTPResponse, Data) {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.accept] = "application/json"
        if let apiKey { headers[HTTPField.Name("X-API-Key")!] = apiKey }
        let request = try HTTPRequest.post(target, headers: headers, allowingPlainHTTP: dangerouslyAllowsPlainHTTP)
        return try await TokenEndpoint.send(request, body: try JSONEncoder().encode(fields), via: transport)
    }
}
