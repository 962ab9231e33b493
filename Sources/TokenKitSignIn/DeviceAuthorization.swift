public import AuthToken
public import Foundation
import HTTPTypes
public import TokenRefresh
public import TokenVerification

/// Signs in on a device without a browser or keyboard (a TV, a command line) with the device authorization grant
/// (RFC 8628): the app shows a code and a URL, the user approves on another device, and the app polls.
///
/// ```swift
/// let device = DeviceAuthorization(
///     url: server.deviceAuthorizationEndpoint!, tokenEndpoint: endpoint, scopes: ["openid", "profile"],
///     server: server)
/// let code = try await device.start()
/// print("Go to \(code.verificationURI) and enter \(code.userCode)")
/// try await device.signIn(code, into: tokens)
/// ```
///
/// Polling waits the server's `interval` (5 seconds without one) on the injected clock, adds 5 seconds at each
/// `slow_down`, keeps waiting at `authorization_pending`, and stops at `access_denied`, `expired_token`, or when the
/// code's `expires_in` has passed.
public struct DeviceAuthorization: Sendable {
    /// What the user needs to approve the sign-in on another device. The device code stays inside.
    public struct Code: Sendable, CustomStringConvertible, CustomReflectable {
        /// The code the user types (`WDJB-MJHT`).
        public let userCode: String
        /// Where the user goes.
        public let verificationURI: URL
        /// The same with the code filled in, for a QR code, if the server gave one.
        public let verificationURIComplete: URL?
        /// How long the code lives, in seconds.
        public let expiresIn: TimeInterval
        /// The first polling interval, in seconds.
        public let interval: TimeInterval
        let deviceCode: String

        /// The user code and URL; never the device code.
        public var description: String { "DeviceAuthorization.Code(\(userCode) at \(verificationURI))" }

        /// What the user sees and the timing; never the device code (`dump()` shows this).
        public var customMirror: Mirror {
            Mirror(
                self,
                children: [
                    "userCode": userCode, "verificationURI": verificationURI, "expiresIn": expiresIn,
                    "interval": interval,
                ], displayStyle: .struct)
        }
    }

    let url: URL
    let tokenEndpoint: TokenEndpoint
    let scopes: [String]
    private let idTokenCheck: IDTokenCheck?
    private let elapsed: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void

    /// A device sign-in.
    ///
    /// With `server`, an ID token in the answer is verified against the server's keys (its signature, `iss`, `aud`,
    /// `azp`, `exp`, `iat` and `at_hash`) before the session is stored, and its claims become
    /// ``/TokenRefresh/TokenRefreshClient/currentUser``; one that fails stores nothing. Without `server`, an ID token
    /// cannot be verified and supplies no profile.
    ///
    /// - Parameters:
    ///   - url: The device authorization endpoint (``AuthorizationServer/deviceAuthorizationEndpoint``).
    ///   - tokenEndpoint: The token endpoint, with the client.
    ///   - scopes: The scopes to ask for.
    ///   - server: The server's metadata, to verify ID tokens with; `nil` to take none.
    ///   - keySource: Where the ID token's keys come from; by default the server's `jwks_uri` over the token
    ///     endpoint's transport.
    ///   - clock: The clock polling waits on.
    public init(
        url: URL, tokenEndpoint: TokenEndpoint, scopes: [String] = [], server: AuthorizationServer? = nil,
        keySource: (any JWKSSource)? = nil, clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.url = url
        self.tokenEndpoint = tokenEndpoint
        self.scopes = scopes
        let keys: (any JWKSSource)? =
            keySource
            ?? server?.jwksURI.map { url in
                RemoteJWKSSource(jwksURL: url, fetch: AuthorizationCodeFlow.fetch(via: tokenEndpoint.transport))
            }
        idTokenCheck = server.flatMap { server in
            keys.map {
                IDTokenCheck(
                    issuer: server.issuer, clientID: tokenEndpoint.client.id, keySource: $0, now: tokenEndpoint.now)
            }
        }
        (elapsed, sleep) = Self.handles(clock)
    }

    private static func handles(
        _ clock: some Clock<Duration>
    ) -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void) {
        let start = clock.now
        return ({ start.duration(to: clock.now) }, { try await clock.sleep(for: $0) })
    }

    /// Asks for a device code and a user code (RFC 8628 section 3.1).
    ///
    /// - Returns: What to show the user.
    /// - Throws: ``SignInError/authorizationFailed`` with the server's code when it refused; a `TokenRefreshError`
    ///   when it could not be reached.
    public func start() async throws -> Code {
        let endpoint = TokenEndpoint(
            url: url, client: tokenEndpoint.client, transport: tokenEndpoint.transport, now: tokenEndpoint.now)
        var parameters: [(String, String)] = []
        if !scopes.isEmpty { parameters.append(("scope", scopes.joined(separator: " "))) }
        let (response, body) = try await endpoint.post(parameters)
        guard response.status.code == 200 else {
            let code = (try? JSONDecoder().decode([String: String].self, from: body))?["error"]
            throw SignInError.authorizationFailed.with(
                oauthError: AuthorizationRedirect.sanitizedCode(code ?? "server_error"))
        }
        struct Wire: Decodable {
            // swift-format-ignore: AlwaysUseLowerCamelCase
            let device_code: String
            let user_code: String
            let verification_uri: String?
            let verification_url: String?
            let verification_uri_complete: String?
            let expires_in: Double
            let interval: Double?
        }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: body), !wire.device_code.isEmpty,
            let verification = (wire.verification_uri ?? wire.verification_url).flatMap(URL.init(string:)),
            wire.expires_in > 0, wire.expires_in.isFinite
        else { throw SignInError.authorizationFailed.with(oauthError: "invalid_response") }
        let interval = min(max(wire.interval ?? 5, 1), 300)
        return Code(
            userCode: wire.user_code, verificationURI: verification,
            verificationURIComplete: wire.verification_uri_complete.flatMap(URL.init(string:)),
            expiresIn: min(wire.expires_in, 86_400), interval: interval, deviceCode: wire.device_code)
    }

    /// Polls until the user approves, then stores the session in `tokens`.
    ///
    /// - Parameters:
    ///   - code: The code from ``start()``.
    ///   - tokens: The session client to sign in.
    /// - Returns: The new session's token.
    /// - Throws: ``SignInError/accessDenied``, ``SignInError/expired``, ``SignInError/cancelled``;
    ///   ``SignInError/idTokenRejected`` when the ID token failed verification (nothing is stored); a
    ///   `TokenRefreshError` for other token endpoint answers.
    @discardableResult
    public func signIn(_ code: Code, into tokens: TokenRefreshClient) async throws -> AuthToken {
        let response = try await verified(poll(code))
        return try await tokens.signIn(.response(response))
    }

    /// `response` with the profile of its verified ID token; as it is without an ID token or a way to verify one
    /// (the response never carries unverified claims as its user).
    private func verified(_ response: TokenResponse) async throws(SignInError) -> TokenResponse {
        guard let idToken = response.idToken, let idTokenCheck else { return response }
        let claims = try await idTokenCheck.verify(
            idToken, nonce: nil, accessToken: response.accessToken, code: nil)
        return TokenResponse(
            accessToken: response.accessToken, refreshToken: response.refreshToken, tokenType: response.tokenType,
            expiresIn: response.expiresIn, scope: response.scope, userID: response.userID ?? claims.subject,
            user: IDTokenCheck.user(claims))
    }

    /// Polls the token endpoint (RFC 8628 section 3.4) until it answers with tokens or a final error.
    func poll(_ code: Code) async throws -> TokenResponse {
        let start = elapsed()
        var interval = Duration.seconds(code.interval)
        let lifetime = Duration.seconds(code.expiresIn)
        let parameters = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", code.deviceCode),
        ]
        while true {
            guard elapsed() - start + interval <= lifetime else { throw SignInError.expired }
            do {
                try await sleep(interval)
            } catch {
                throw SignInError.cancelled
            }
            do {
                return try await tokenEndpoint.requestToken(parameters, isSignIn: true)
            } catch {
                switch error.oauthError {
                case "authorization_pending":
                    continue
                case "slow_down":
                    // Section 3.5: add 5 seconds to this and every later interval.
                    interval += .seconds(5)
                case "access_denied":
                    throw SignInError.accessDenied
                case "expired_token":
                    throw SignInError.expired.with(oauthError: "expired_token")
                default:
                    if error == .cancelled { throw SignInError.cancelled }
                    throw error
                }
            }
        }
    }
}
