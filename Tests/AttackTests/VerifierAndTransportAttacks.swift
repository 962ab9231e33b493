import Crypto
import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh
import TokenVerification
import _CryptoExtras

/// What an attacker tried against the backend verifier (HMAC keys, audiences, parties, skipped keys, JWKS
/// redirects) and against the transport of the most valuable secrets (plain http, cookie scope).
@Suite(.logLeakCheck()) struct VerifierAndTransportAttacks {
    static let issuer = "https://clerk.example.com"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let hmacText: String = {
        let text = "attack-hmac-" + (0..<52).map { _ in String("abcdefghijklmnopqrstuvwxyz".randomElement()!) }.joined()
        TestSecrets.shared.register(text, as: .clientSecret)
        return text
    }()

    static func b64(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func claims(_ extra: String = "", exp: Bool = true) -> String {
        let expiry = exp ? #","exp":1800000060"# : ""
        return #"{"sub":"user_2abc","iss":"\#(issuer)","iat":1799999999\#(expiry)\#(extra)}"#
    }

    static func hs256(kid: String?, payload: String = claims(), secret: [UInt8] = Array(hmacText.utf8)) -> String {
        let kidMember = kid.map { #","kid":"\#($0)""# } ?? ""
        let input = b64(Array(#"{"alg":"HS256","typ":"JWT"\#(kidMember)}"#.utf8)) + "." + b64(Array(payload.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: secret))
        return register(input + "." + b64(Array(mac)))
    }

    static func rs256(kid: String, payload: String = claims(), typ: String = "JWT") -> String {
        let input =
            b64(Array(#"{"alg":"RS256","typ":"\#(typ)","kid":"\#(kid)"}"#.utf8)) + "." + b64(Array(payload.utf8))
        let signature = try! rsa.signature(for: SHA256.hash(data: Array(input.utf8)), padding: .insecurePKCS1v1_5)
        return register(input + "." + b64(Array(signature.rawRepresentation)))
    }

    static func register(_ token: String) -> String {
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    static func rsaJWK(kid: String, key: _RSA.Signing.PrivateKey = rsa) -> String {
        let primitives = try! key.publicKey.getKeyPrimitives()
        return
            #"{"kty":"RSA","use":"sig","kid":"\#(kid)","n":"\#(b64(primitives.modulus))","e":"\#(b64(primitives.publicExponent))"}"#
    }

    static func keySet(_ keys: [String]) -> JWKSet {
        try! JWKSet(json: Data(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8))
    }

    static func reason(_ verifier: TokenVerifier, _ token: String) async -> String {
        do {
            _ = try await verifier.verify(token)
            return "accepted"
        } catch {
            return error.reason
        }
    }

    static let clerk = TokenVerifier.AudienceRule.notChecked(reason: "Clerk session tokens carry no aud")

    // MARK: HMAC keys

    @Test func anHMACTokenWithAKeyIDTheSecretWasNotIssuedUnderIsRefused() async {
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: Self.issuer, audience: Self.clerk, algorithms: [.hs256],
                hmacSecrets: [HMACSecret(keyID: "2025-06", text: Self.hmacText)]),
            keySource: StaticJWKSSource(JWKSet(keys: [])), now: { Self.now })
        #expect(await Self.reason(verifier, Self.hs256(kid: "2025-06")) == "accepted")
        #expect(await Self.reason(verifier, Self.hs256(kid: "attacker-chosen")) == "unknownKeyID")
        #expect(await Self.reason(verifier, Self.hs256(kid: nil)) == "missingKeyID")
    }

    // MARK: Claims

    @Test func aTokenWithoutExpiryIsRefusedWhenTheAppAddsARequiredClaim() async {
        let verifier = TokenVerifier(
            configuration: .init(issuer: Self.issuer, audience: Self.clerk, requiredClaims: ["sid"]),
            keySource: StaticJWKSSource(Self.keySet([Self.rsaJWK(kid: "k1")])), now: { Self.now })
        let forever = Self.rs256(kid: "k1", payload: Self.claims(#","sid":"sess_1""#, exp: false))
        #expect(await Self.reason(verifier, forever) == "missingClaim")
    }

    @Test func aTokenForAnotherAPIIsRefusedByAnAccessTokenConfiguration() async {
        let verifier = TokenVerifier(
            configuration: .init(issuer: Self.issuer, audience: .oneOf(["https://api.example.com"])),
            keySource: StaticJWKSSource(Self.keySet([Self.rsaJWK(kid: "k1")])), now: { Self.now })
        let forOtherAPI = Self.rs256(kid: "k1", payload: Self.claims(#","aud":"https://billing.example.com""#))
        #expect(await Self.reason(verifier, forOtherAPI) == "audienceMismatch")
        #expect(await Self.reason(verifier, Self.rs256(kid: "k1")) == "missingClaim")
    }

    @Test func anIDTokenOfTheSameIssuerIsRefusedWhereAnAccessTokenIsRequired() async {
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: Self.issuer, audience: .oneOf(["https://api.example.com"]), requiredType: "at+jwt"),
            keySource: StaticJWKSSource(Self.keySet([Self.rsaJWK(kid: "k1")])), now: { Self.now })
        let payload = Self.claims(#","aud":"https://api.example.com""#)
        #expect(await Self.reason(verifier, Self.rs256(kid: "k1", payload: payload)) == "typeMismatch")
        #expect(await Self.reason(verifier, Self.rs256(kid: "k1", payload: payload, typ: "at+jwt")) == "accepted")
    }

    @Test func aTokenMintedForAnotherClientOfTheIssuerIsRefusedByItsAuthorizedParty() async {
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: Self.issuer, audience: Self.clerk, allowedParties: ["https://app.example.com"],
                requiresAuthorizedParty: true),
            keySource: StaticJWKSSource(Self.keySet([Self.rsaJWK(kid: "k1")])), now: { Self.now })
        let otherClient = Self.rs256(kid: "k1", payload: Self.claims(#","azp":"https://other.example.com""#))
        #expect(await Self.reason(verifier, otherClient) == "partyNotAllowed")
        #expect(await Self.reason(verifier, Self.rs256(kid: "k1")) == "missingClaim")
    }

    @Test func aTokenSignedUnderAKeyTheSetSkippedSaysTheKeyWasUnusable() async throws {
        let weak = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let set = Self.keySet([Self.rsaJWK(kid: "weak", key: weak)])
        let verifier = TokenVerifier(
            configuration: .init(issuer: Self.issuer, audience: Self.clerk), keySource: StaticJWKSSource(set),
            now: { Self.now })
        #expect(await Self.reason(verifier, Self.rs256(kid: "weak")) == "unusableKey")
        let remote = RemoteJWKSSource(jwksURL: URL(string: "https://clerk.example.com/.well-known/jwks.json")!) { _ in
            .init(body: Data(#"{"keys":[\#(Self.rsaJWK(kid: "weak", key: weak))]}"#.utf8))
        }
        let overRemote = TokenVerifier(
            configuration: .init(issuer: Self.issuer, audience: Self.clerk), keySource: remote, now: { Self.now })
        #expect(await Self.reason(overRemote, Self.rs256(kid: "weak")) == "unusableKey")
    }

    // MARK: JWKS transport

    @Test func aJWKSEndpointRedirectingToAnotherOriginDoesNotServeItsKeys() async throws {
        let attacker = try LoopbackServer { _, _ in
            .init(status: 200, body: Data(#"{"keys":[\#(Self.rsaJWK(kid: "attacker-key"))]}"#.utf8))
        }
        defer { attacker.stop() }
        let issuer = try LoopbackServer { _, _ in
            .init(status: 302, headers: [("Location", "http://localhost:\(attacker.port)/jwks.json")])
        }
        defer { issuer.stop() }
        let fetch = RemoteJWKSSource.urlSessionFetch()
        await #expect(throws: (any Error).self) {
            _ = try await fetch(URL(string: "http://127.0.0.1:\(issuer.port)/jwks.json")!)
        }
    }

    @Test func aJWKSOverPlainHTTPToARemoteHostIsNeverFetched() async {
        let fetched = Locked(0)
        let source = RemoteJWKSSource(jwksURL: URL(string: "http://clerk.example.com/.well-known/jwks.json")!) { _ in
            fetched.withLock { $0 += 1 }
            return .init(body: Data(#"{"keys":[\#(Self.rsaJWK(kid: "k1"))]}"#.utf8))
        }
        let verifier = TokenVerifier(
            configuration: .init(issuer: Self.issuer, audience: Self.clerk), keySource: source, now: { Self.now })
        #expect(await Self.reason(verifier, Self.rs256(kid: "k1")) == "insecureKeySetURL")
        #expect(fetched.withLock { $0 } == 0)
    }

    @Test func discoveryOverPlainHTTPToARemoteIssuerIsNeverFetched() async {
        let fetched = Locked(0)
        let source = RemoteJWKSSource(location: .openIDDiscovery(issuer: URL(string: "http://accounts.example.com")!)) {
            _ in
            fetched.withLock { $0 += 1 }
            return .init(body: Data())
        }
        await source.refresh()
        #expect(fetched.withLock { $0 } == 0)
    }

    // MARK: Token endpoints over plain http

    static let refreshToken: String = {
        let token = "attack-refresh-token-" + UUID().uuidString
        TestSecrets.shared.register(token, as: .refreshToken)
        return token
    }()

    @Test func aRefreshTokenIsNeverPostedToAPlainHTTPTokenEndpoint() async {
        let transport = MockTransport { _, _ in (HTTPResponse(status: .ok), Data()) }
        let endpoint = TokenEndpoint(
            url: URL(string: "http://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
            transport: transport)
        _ = try? await OAuthRefreshStrategy(endpoint: endpoint).refresh(using: Self.refreshToken)
        #expect(transport.requests.isEmpty)
    }

    @Test func aRefreshTokenIsNeverRevokedAtAPlainHTTPEndpoint() async throws {
        let transport = MockTransport { _, _ in (HTTPResponse(status: .ok), Data()) }
        let endpoint = TokenEndpoint(
            url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
            transport: transport)
        let revocation = TokenRevocation.rfc7009(url: URL(string: "http://auth.example.com/revoke")!, using: endpoint)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), configuration: .init(revocation: revocation))
        let access = Self.register("attack-access-" + UUID().uuidString)
        try await client.signIn(.custom { TokenResponse(accessToken: access, refreshToken: Self.refreshToken) })
        try await client.signOut()
        // The sign-out waits 50 ms of real time for the revocation, which goes on in the background: wait for it, so
        // that a revocation sent late on a loaded machine is seen here too.
        _ = await client.sendPendingSignOuts()
        #expect(transport.requests.isEmpty)
    }

    @Test func aRefreshTokenIsNeverPostedToAPlainHTTPJSONEndpoint() async {
        let transport = MockTransport { _, _ in (HTTPResponse(status: .ok), Data()) }
        let strategy = JSONEndpointRefreshStrategy(
            baseURL: URL(string: "http://api.example.com")!, apiKey: nil, transport: transport)
        _ = try? await strategy.refresh(using: Self.refreshToken)
        #expect(transport.requests.isEmpty)
    }

    @Test func aSessionCookieIsNeverSentToAPlainHTTPServer() async {
        let transport = MockTransport { _, _ in (HTTPResponse(status: .ok), Data("null".utf8)) }
        let strategy = CookieSessionStrategy(baseURL: URL(string: "http://api.example.com")!, transport: transport)
        _ = try? await strategy.refresh(using: Self.refreshToken)
        #expect(transport.requests.isEmpty)
    }

    // MARK: Cookie scope

    static let cookieValue: String = {
        let value = "attack-cookie-" + UUID().uuidString
        TestSecrets.shared.register(value, as: .refreshToken)
        return value
    }()

    /// Signs in at `https://api.example.com` with a cookie the server scoped by `attributes`, then sends `request`
    /// through a client allowed to reach both origins; returns the `Cookie` field the request carried.
    static func cookieSent(setCookie attributes: String, to request: HTTPRequest) async throws -> String? {
        let transport = MockTransport { request, _ in
            var headers = HTTPFields()
            if request.path == "/api/auth/sign-in/username" {
                headers[.setCookie] = "better-auth.session_token=\(cookieValue)" + attributes
            }
            return (HTTPResponse(status: .ok, headerFields: headers), Data(#"{"user":{"id":"u1"}}"#.utf8))
        }
        let strategy = CookieSessionStrategy(baseURL: URL(string: "https://api.example.com")!, transport: transport)
        let client = TokenRefreshClient(strategy: strategy)
        try await client.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: Data("{}".utf8)))
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(
                allowedOrigins: [
                    HTTPOrigin(string: "https://api.example.com")!, HTTPOrigin(string: "https://cdn.example.net")!,
                ],
                credentialPresentation: strategy.presentation))
        _ = try await api.executeWithAutoRetry(request)
        return transport.requests.last?.headerFields[.cookie]
    }

    @Test func aHostOnlySessionCookieIsNotSentToAnotherAllowedOrigin() async throws {
        let other = HTTPRequest(method: .get, scheme: "https", authority: "cdn.example.net", path: "/asset")
        #expect(try await Self.cookieSent(setCookie: "; Path=/; Secure; HttpOnly", to: other) == nil)
    }

    @Test func aSessionCookieScopedToAPathIsNotSentOutsideIt() async throws {
        let outside = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/public/x")
        #expect(try await Self.cookieSent(setCookie: "; Path=/api; Secure", to: outside) == nil)
    }

    @Test(arguments: ["workers.dev", "dev", "co.uk"])
    func aCookieDomainThatIsAPublicSuffixIsRefused(_ domain: String) {
        let host = domain == "co.uk" ? "shop.example.co.uk" : "app.linnefromice.workers.dev"
        #expect(throws: SetCookie.Refusal.self) {
            try SetCookie(
                parsing: "sid=\(Self.cookieValue); Domain=\(domain)", requestHost: host, requestIsSecure: true,
                now: Self.now)
        }
    }
}
