public import Foundation

/// How a session starts: a grant exchanged at the token endpoint, or a token obtained elsewhere.
///
/// Pass one to ``TokenRefreshClient/signIn(_:userID:)``. Its description never shows passwords, codes or
/// verifiers.
public struct SignInGrant: Sendable, CustomStringConvertible {
    private let name: String
    private let exchange: @Sendable () async throws -> TokenResponse

    private init(name: String, exchange: @escaping @Sendable () async throws -> TokenResponse) {
        self.name = name
        self.exchange = exchange
    }

    /// The resource owner password grant (RFC 6749 section 4.3), which the FitIQ and Lume apps use.
    ///
    /// - Parameters:
    ///   - username: The user name or e-mail.
    ///   - password: The password. It is sent once and never kept or logged.
    ///   - scope: The scope to ask for, if any.
    ///   - endpoint: The token endpoint.
    /// - Returns: The grant.
    public static func password(
        username: String, password: String, scope: String? = nil, at endpoint: TokenEndpoint
    ) -> SignInGrant {
        SignInGrant(name: "password") {
            var parameters = [("grant_type", "password"), ("username", username), ("password", password)]
            if let scope { parameters.append(("scope", scope)) }
            return try await endpoint.requestToken(parameters, isSignIn: true)
        }
    }

    /// The authorization-code exchange with PKCE (RFC 6749 section 4.1.3, RFC 7636 section 4.5). The app
    /// runs the browser part and hands in the code it received on the redirect.
    ///
    /// - Parameters:
    ///   - code: The authorization code.
    ///   - redirectURI: The redirect URI used in the authorization request.
    ///   - pkce: The PKCE pair whose challenge went with the authorization request.
    ///   - endpoint: The token endpoint.
    /// - Returns: The grant.
    public static func authorizationCode(
        _ code: String, redirectURI: URL, pkce: PKCE, at endpoint: TokenEndpoint
    ) -> SignInGrant {
        SignInGrant(name: "authorization_code") {
            let parameters = [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI.absoluteString),
                ("code_verifier", pkce.verifier),
            ]
            return try await endpoint.requestToken(parameters, isSignIn: true)
        }
    }

    /// Sign in with Apple: exchanges the identity token Apple gave the app, with the raw nonce, at the app
    /// backend's token endpoint (RFC 8693 token exchange; the backend verifies the token with Apple's keys).
    ///
    /// Before anything is sent, the identity token's claims are checked on the device: `iss` is Apple,
    /// `aud` contains `clientID` (the app's bundle ID or services ID), it has not expired, and its `nonce`
    /// claim is the SHA-256 (hex) of `rawNonce`, as Apple's flow sets it. A token that fails a check throws
    /// ``TokenRefreshError/invalidArgument`` and goes nowhere. The Apple UI part stays in the app.
    ///
    /// - Parameters:
    ///   - identityToken: The JWT from `ASAuthorizationAppleIDCredential.identityToken`.
    ///   - rawNonce: The nonce whose SHA-256 the app put in the Apple request.
    ///   - clientID: The expected audience.
    ///   - endpoint: The backend's token endpoint.
    ///   - now: The wall clock for the expiry check.
    /// - Returns: The grant.
    public static func appleIdentityToken(
        _ identityToken: String, rawNonce: String, clientID: String, at endpoint: TokenEndpoint,
        now: @escaping @Sendable () -> Date = { Date() }
    ) -> SignInGrant {
        SignInGrant(name: "apple_identity_token") {
            try AppleIdentityToken.check(identityToken, rawNonce: rawNonce, clientID: clientID, now: now())
            let parameters = [
                ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
                ("subject_token", identityToken),
                ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
                ("nonce", rawNonce),
            ]
            return try await endpoint.requestToken(parameters, isSignIn: true)
        }
    }

    /// A grant done by a closure (an SDK's sign-in, a custom endpoint).
    ///
    /// - Parameter body: Returns the token response of the sign-in.
    /// - Returns: The grant.
    public static func custom(_ body: @escaping @Sendable () async throws -> TokenResponse) -> SignInGrant {
        SignInGrant(name: "custom", exchange: body)
    }

    /// Adopts a token response obtained elsewhere (a migration from another store).
    ///
    /// - Parameter response: The token response.
    /// - Returns: The grant.
    package static func response(_ response: TokenResponse) -> SignInGrant {
        SignInGrant(name: "response") { response }
    }

    /// Runs the exchange.
    func run() async throws -> TokenResponse { try await exchange() }

    /// The kind of grant; never its secrets.
    public var description: String { "SignInGrant(\(name))" }
}
