public import AuthToken
public import Foundation
public import HTTPTypes
public import NetworkRetry

/// An OAuth 2.0 token endpoint: where grants are exchanged for tokens (RFC 6749 section 3.2).
///
/// The strategies and sign-in grants share it. It sends form-encoded requests, authenticates the client
/// as configured, and turns answers into a ``TokenResponse`` or a classified ``TokenRefreshError``.
public struct TokenEndpoint: Sendable {
    /// The endpoint URL (`https://auth.example.com/oauth/token`).
    package let url: URL
    /// The client the requests speak for.
    package let client: OAuthClient
    /// The transport that carries the requests.
    package let transport: any HTTPTransport
    /// Extra header fields sent with every request (an API key). Never logged.
    package let additionalHeaders: HTTPFields
    /// The wall clock, for `Retry-After` given as an HTTP date.
    package let now: @Sendable () -> Date
    /// Whether the endpoint may be plain `http` to a host that is not loopback. `false` by default: such a
    /// request is refused with ``TokenRefreshError/insecureEndpoint`` before anything is sent, since refresh
    /// tokens, passwords and client secrets would travel in clear.
    package let dangerouslyAllowsPlainHTTP: Bool

    /// Creates an endpoint.
    ///
    /// - Parameters:
    ///   - url: The token endpoint URL.
    ///   - client: The OAuth client.
    ///   - transport: The transport to send with.
    ///   - additionalHeaders: Extra header fields for every request.
    ///   - now: The wall clock; ``/AuthToken/AuthToken/systemNow`` by default.
    ///   - dangerouslyAllowsPlainHTTP: Whether plain `http` to a host that is not loopback is allowed; `false` by
    ///     default. Turn it on only inside a network you trust end to end.
    public init(
        url: URL, client: OAuthClient, transport: any HTTPTransport, additionalHeaders: HTTPFields = [:],
        now: @escaping @Sendable () -> Date = AuthToken.systemNow, dangerouslyAllowsPlainHTTP: Bool = false
    ) {
        self.url = url
        self.client = client
        self.transport = transport
        self.additionalHeaders = additionalHeaders
        self.now = now
        self.dangerouslyAllowsPlainHTTP = dangerouslyAllowsPlainHTTP
    }

    /// Sends a grant with `parameters` and returns the token response.
    ///
    /// - Parameters:
    ///   - parameters: The form parameters (`grant_type` first), without client authentication.
    ///   - isSignIn: Whether `invalid_grant` means a rejected sign-in rather than a dead refresh token.
    /// - Returns: The token response.
    /// - Throws: A classified ``TokenRefreshError``.
    public func requestToken(
        _ parameters: [(String, String)], isSignIn: Bool = false
    ) async throws(TokenRefreshError) -> TokenResponse {
        let (response, body) = try await post(parameters)
        let grantType = parameters.first { $0.0 == "grant_type" }?.1
        return try TokenEndpoint.interpret(
            response, body: body, isSignIn: isSignIn, now: now,
            checksUserCredentials: isSignIn && grantType == "password")
    }

    /// Sends a form POST with client authentication and returns the raw answer (also for the sign-in module's
    /// pushed authorization and device authorization requests).
    package func post(_ parameters: [(String, String)]) async throws(TokenRefreshError) -> (HTTPResponse, Data) {
        var fields = parameters
        var headers = additionalHeaders
        headers[.contentType] = "application/x-www-form-urlencoded"
        headers[.accept] = "application/json"
        if client.authentication.isBasic {
            // RFC 6749 section 2.3.1: form-encode ID and secret before joining them.
            let pair = FormEncoding.basicEncode(client.id) + ":" + FormEncoding.basicEncode(client.secret ?? "")
            headers[.authorization] = "Basic " + Data(pair.utf8).base64EncodedString()
        } else if client.authentication.isBody {
            fields.append(("client_id", client.id))
            if let secret = client.secret { fields.append(("client_secret", secret)) }
        } else {
            fields.append(("client_id", client.id))
        }
        let request = try HTTPRequest.post(url, headers: headers, allowingPlainHTTP: dangerouslyAllowsPlainHTTP)
        return try await TokenEndpoint.send(request, body: Data(FormEncoding.encode(fields).utf8), via: transport)
    }

    /// Sends through `transport`, turning thrown errors into classified ones.
    static func send(
        _ request: HTTPRequest, body: Data, via transport: any HTTPTransport
    ) async throws(TokenRefreshError) -> (HTTPResponse, Data) {
        do {
            return try await transport.send(request, body: body)
        } catch is CancellationError {
            throw .cancelled
        } catch {
            if Task.isCancelled { throw .cancelled }
            throw TokenRefreshError.transient.with(underlying: error).with(connectivityFailure: true)
        }
    }

    /// Classifies a token endpoint answer (RFC 6749 sections 5.1 and 5.2).
    package static func interpret(
        _ response: HTTPResponse, body: Data, isSignIn: Bool, now: @Sendable () -> Date,
        rejectionWithoutCode: TokenRefreshError? = nil, checksUserCredentials: Bool = false
    ) throws(TokenRefreshError) -> TokenResponse {
        let status = response.status.code
        if (200..<300).contains(status) {
            do {
                return try TokenResponse.parse(body)
            } catch {
                throw error.with(status: status)
            }
        }
        throw classify(
            response, body: body, isSignIn: isSignIn, now: now, rejectionWithoutCode: rejectionWithoutCode,
            checksUserCredentials: checksUserCredentials)
    }

    /// The error for a non-2xx answer. Every error carries the status and the server's OAuth `error` code,
    /// when it gave one.
    ///
    /// - Parameters:
    ///   - isSignIn: Whether `invalid_grant` means a rejected sign-in rather than a dead refresh token.
    ///   - checksUserCredentials: Whether the grant carried a user's credentials (the password grant): some
    ///     servers answer a wrong password with `400 invalid_request` (authlib), which then is a rejected
    ///     sign-in, not a configuration error. `invalid_client` and `unauthorized_client` stay configuration
    ///     errors either way.
    static func classify(
        _ response: HTTPResponse, body: Data, isSignIn: Bool, now: @Sendable () -> Date,
        rejectionWithoutCode: TokenRefreshError? = nil, checksUserCredentials: Bool = false
    ) -> TokenRefreshError {
        let status = response.status.code
        let retryAfter = RetryAfter.parse(response.headerFields[.retryAfter], now: now())
        let code = TokenResponse.oauthErrorCode(body)
        if status == 408 || status == 429 || (500..<600).contains(status) {
            return TokenRefreshError.transient.with(oauthError: code).with(status: status).with(retryAfter: retryAfter)
        }
        switch code {
        case "invalid_grant":
            return (isSignIn ? TokenRefreshError.signInRejected : .refreshTokenRejected).with(oauthError: code)
                .with(status: status)
        case "invalid_request" where checksUserCredentials && status == 400:
            return TokenRefreshError.signInRejected.with(oauthError: code).with(status: status)
        case "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "invalid_request":
            return TokenRefreshError.configuration.with(oauthError: code).with(status: status)
        case "temporarily_unavailable", "server_error":
            return TokenRefreshError.transient.with(oauthError: code).with(status: status).with(retryAfter: retryAfter)
        case .some(let other) where isSignIn && (status == 401 || status == 403 || other == "invalid_credentials"):
            // A sign-in refused with a code of the server's own (FitIQ's `401 invalid_credentials`): the user's
            // credentials were not accepted.
            return TokenRefreshError.signInRejected.with(oauthError: other).with(status: status)
        case .some(let other):
            return TokenRefreshError.unexpectedResponse.with(oauthError: other).with(status: status)
        case nil:
            if let rejectionWithoutCode, status == 401 { return rejectionWithoutCode.with(status: status) }
            // RFC 6749 section 5.2: a 401 without a code is a failed client authentication.
            if status == 401 {
                return TokenRefreshError.configuration.with(oauthError: "invalid_client").with(status: status)
            }
            return TokenRefreshError.unexpectedResponse.with(status: status)
        }
    }
}

extension HTTPRequest {
    /// A POST to `url`, which must be absolute with a host, and `https` or `http` to loopback unless
    /// `allowingPlainHTTP`.
    ///
    /// - Throws: ``TokenRefreshError/invalidArgument`` for a URL without a host,
    ///   ``TokenRefreshError/insecureEndpoint`` for plain `http` to a host that is not loopback.
    static func post(
        _ url: URL, headers: HTTPFields, allowingPlainHTTP: Bool = false
    ) throws(TokenRefreshError) -> HTTPRequest {
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw .invalidArgument
        }
        // Every request TokenKit builds for a token endpoint, a refresh, a sign-in, a session check or a
        // revocation comes through here: none carries its secret over plain http to a remote host.
        guard allowingPlainHTTP || HTTPOrigin(scheme: scheme, host: host, port: url.port)?.allowsCredentials == true
        else { throw .insecureEndpoint }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let authority = url.port.map { "\(bracketed):\($0)" } ?? bracketed
        let encodedPath = url.path(percentEncoded: true)
        var path = encodedPath.isEmpty ? "/" : encodedPath
        if let query = url.query(percentEncoded: true) { path += "?" + query }
        return HTTPRequest(method: .post, scheme: scheme, authority: authority, path: path, headerFields: headers)
    }
}
