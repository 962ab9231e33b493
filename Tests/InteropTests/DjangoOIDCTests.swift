import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh
import TokenVerification

extension Interop {
    /// django-oauth-toolkit's OpenID Connect ID tokens (RS256, a key made at every server start), verified by
    /// ``TokenVerifier`` through DOT's own discovery document and JWKS.
    ///
    /// The flow is the real one: alice signs in to Django (session cookie, CSRF), DOT's authorization endpoint
    /// answers the authorization request (`openid` scope, PKCE S256, a nonce) with a 302 carrying the code, and
    /// TokenKit exchanges the code (``SignInGrant/authorizationCode(_:redirectURI:pkce:at:)``) and later refreshes;
    /// both token responses carry an `id_token`, which TokenKit does not keep, so ``IDTokenCapture`` reads it on the
    /// way past.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct DjangoOIDC {
        static let clientID = "interop-oidc"
        static let redirectURI = URL(string: "http://127.0.0.1/interop-oidc/callback")!

        @Test func idTokensFromTheAuthorizationCodeGrantVerifyThroughDiscovery() async throws {
            let server = try await InteropServer.prepared()
            try await server.deleteDjangoSessions()
            let issuer = server.baseURL.appending(path: "o").absoluteString

            // 1. A Django session, then DOT's authorization endpoint through the cookie-session client.
            let browser = DjangoSessionStack(server, store: InMemoryTokenStore(), followsRedirects: false)
            let session = try await browser.signIn()
            TestSecrets.shared.register(session.accessToken, as: .credential)
            let pkce = PKCE.generate()
            let nonce = "interop-nonce-\(UUID().uuidString)"
            let state = "interop-state-\(UUID().uuidString)"
            let code = try await authorize(browser, pkce: pkce, nonce: nonce, state: state)
            TestSecrets.shared.register(code, as: .credential)

            // 2. TokenKit exchanges the code; the answer carries an ID token.
            let capture = IDTokenCapture(RecordingTransport(server.transport))
            let endpoint = TokenEndpoint(
                url: server.tokenURL, client: OAuthClient(id: Self.clientID), transport: capture)
            let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint))
            let token = try await client.signIn(
                .authorizationCode(code, redirectURI: Self.redirectURI, pkce: pkce, at: endpoint))
            TestSecrets.shared.register(token)
            let idToken = try #require(capture.last, "DOT answered the openid code exchange with an id_token")
            TestSecrets.shared.register(idToken, as: .idToken)

            // 3. Verified through OIDC discovery: issuer, audience, RS256 only, DOT's key.
            let keys = RemoteJWKSSource(location: .openIDDiscovery(issuer: try #require(URL(string: issuer))))
            let verifier = TokenVerifier(
                configuration: .init(issuer: issuer, audience: .oneOf([Self.clientID]), algorithms: [.rs256]),
                keySource: keys)
            let claims = try await verifier.verify(idToken)
            #expect(claims.issuer == issuer)
            #expect(claims.audience == [Self.clientID])
            #expect(claims.algorithm == .rs256)
            #expect(claims.keyID != nil, "DOT names its key")
            #expect(!claims.subject.isEmpty)
            #expect(claims.string("nonce") == nonce, "the nonce of the authorization request")
            #expect(claims.string("at_hash") != nil)
            #expect(keys.fetchCount == 1)

            // The rules bite on DOT's real token: another audience, another issuer, a changed signature.
            let otherAudience = TokenVerifier(
                configuration: .init(issuer: issuer, audience: .oneOf(["another-client"])), keySource: keys)
            #expect(await failureReason(otherAudience, idToken) == TokenVerificationError.audienceMismatch.reason)
            let otherIssuer = TokenVerifier(
                configuration: .init(issuer: server.baseURL.absoluteString, audience: .oneOf([Self.clientID])),
                keySource: keys)
            #expect(await failureReason(otherIssuer, idToken) == TokenVerificationError.issuerMismatch.reason)
            let fresh = TokenVerifier(
                configuration: .init(issuer: issuer, audience: .oneOf([Self.clientID]), tokenCacheCapacity: 0),
                keySource: keys)
            #expect(await failureReason(fresh, tampered(idToken)) == TokenVerificationError.invalidSignature.reason)
            let ecOnly = TokenVerifier(
                configuration: .init(issuer: issuer, audience: .oneOf([Self.clientID]), algorithms: [.es256]),
                keySource: keys)
            #expect(await failureReason(ecOnly, idToken) == TokenVerificationError.algorithmNotAllowed.reason)
            // RFC 9068's `typ` rule keeps an ID token (DOT writes `typ: JWT`) from passing as an access token.
            let accessTokenRules = TokenVerifier(
                configuration: .init(issuer: issuer, audience: .oneOf([Self.clientID]), requiredType: "at+jwt"),
                keySource: keys)
            #expect(await failureReason(accessTokenRules, idToken) == TokenVerificationError.typeMismatch.reason)
            // DOT's own resource check is looser: with OIDC on, a bearer JWT is looked up as an ID token, so the ID
            // token is accepted at /api/me (see Interop/README.md, "RFC 9068 JWT access tokens from DOT").
            #expect(try await server.rawMe(idToken) == 200)
            #expect(keys.fetchCount == 1, "no refusal fetched the key set again")

            // 4. DOT re-issues an ID token on refresh (same user, same audience); verified by the JWKS URL.
            let refreshed = try await client.refreshToken(afterRejectionOf: token.accessToken)
            TestSecrets.shared.register(refreshed)
            let refreshedIDToken = try #require(capture.last)
            TestSecrets.shared.register(refreshedIDToken, as: .idToken)
            #expect(capture.count == 2)
            let jwks = RemoteJWKSSource(jwksURL: server.baseURL.appending(path: "o/.well-known/jwks.json"))
            let byJWKS = TokenVerifier(
                configuration: .init(issuer: issuer, audience: .oneOf([Self.clientID])), keySource: jwks)
            let refreshedClaims = try await byJWKS.verify(refreshedIDToken)
            #expect(refreshedClaims.subject == claims.subject)
            #expect(refreshedClaims.keyID == claims.keyID)
            #expect(jwks.fetchCount == 1)
        }

        /// Sends the authorization request with alice's session cookie and returns the code from the 302.
        private func authorize(
            _ browser: DjangoSessionStack, pkce: PKCE, nonce: String, state: String
        ) async throws -> String {
            var query = URLComponents()
            query.queryItems = [
                URLQueryItem(name: "response_type", value: "code"),
                URLQueryItem(name: "client_id", value: Self.clientID),
                URLQueryItem(name: "redirect_uri", value: Self.redirectURI.absoluteString),
                URLQueryItem(name: "scope", value: "openid"),
                URLQueryItem(name: "code_challenge", value: pkce.challenge),
                URLQueryItem(name: "code_challenge_method", value: pkce.challengeMethod),
                URLQueryItem(name: "state", value: state),
                URLQueryItem(name: "nonce", value: nonce),
            ]
            let path = "/o/authorize/?" + (query.percentEncodedQuery ?? "")
            let (response, _) = try await browser.api.executeWithAutoRetry(browser.server.request(.get, path))
            #expect(response.status.code == 302, "DOT skips the consent page for this client")
            let location = try #require(response.headerFields[.location].flatMap { URLComponents(string: $0) })
            #expect(location.host == Self.redirectURI.host)
            #expect(location.path == Self.redirectURI.path)
            let items = location.queryItems ?? []
            #expect(items.first { $0.name == "state" }?.value == state)
            return try #require(items.first { $0.name == "code" }?.value)
        }
    }
}

/// Passes everything through and remembers the `id_token` of every token response (TokenKit's `TokenResponse`
/// has no place for it).
final class IDTokenCapture: HTTPTransport {
    private let base: any HTTPTransport
    private let tokens = Locked<[String]>([])

    init(_ base: any HTTPTransport) { self.base = base }

    /// The most recent ID token seen.
    var last: String? { tokens.withLock { $0.last } }
    /// How many ID tokens were seen.
    var count: Int { tokens.withLock { $0.count } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let (response, data) = try await base.send(request, body: body)
        if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let idToken = object["id_token"] as? String
        {
            TestSecrets.shared.register(idToken, as: .idToken)
            tokens.withLock { $0.append(idToken) }
        }
        return (response, data)
    }
}
