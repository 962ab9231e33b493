import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitSignIn
import TokenKitTesting
import TokenRefresh
import TokenVerification

extension Interop {
    /// `AuthorizationCodeFlow` against django-oauth-toolkit's real `/o/authorize/` with OpenID Connect on: discovery,
    /// PKCE, `state`, `nonce`, the ID token verified through DOT's JWKS, the profile in `currentUser`, and
    /// RP-initiated logout. The browser is alice's Django session (signed in through Django's login view, CSRF and
    /// all), which DOT's authorization endpoint answers with a 302 to the redirect URI.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct DjangoBrowserSignIn {
        static let redirectURI = URL(string: "http://127.0.0.1/interop-oidc/callback")!
        static let postLogoutRedirectURI = URL(string: "http://127.0.0.1/interop-oidc/signed-out")!

        /// Alice's browser: her Django session cookie; it approves (GET, DOT skips consent for this client) or
        /// denies (the consent form posted without `allow`), and returns the 302's `Location`.
        struct DjangoBrowser: AuthorizationUserAgent {
            let stack: DjangoSessionStack
            var denies = false

            func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
                let target = url.path(percentEncoded: true) + "?" + (url.query(percentEncoded: true) ?? "")
                let response: HTTPResponse
                if denies {
                    // The consent form's fields are the request's parameters; no `allow` means "deny".
                    var request = stack.server.request(.post, url.path(percentEncoded: true))
                    request.headerFields[.contentType] = "application/x-www-form-urlencoded"
                    (response, _) = try await stack.api.executeWithAutoRetry(
                        request, body: Data((url.query(percentEncoded: true) ?? "").utf8))
                } else {
                    (response, _) = try await stack.api.executeWithAutoRetry(stack.server.request(.get, target))
                }
                guard response.status.code == 302, let location = response.headerFields[.location],
                    let redirect = URL(string: location)
                else { throw InteropHarnessError(description: "no redirect from \(url.path): \(response.status)") }
                return redirect
            }
        }

        /// The ID token DOT issued to an earlier sign-in through `agent`, which was signed out since.
        static func idTokenOfAnEarlierSignIn(_ server: InteropServer, agent: DjangoBrowser) async throws -> String? {
            let capture = IDTokenCapture(RecordingTransport(server.transport))
            let (earlier, earlierTokens, _) = try await flow(server, store: InMemoryTokenStore(), transport: capture)
            TestSecrets.shared.register(try await earlier.signIn(using: agent))
            try await earlierTokens.signOut()
            return capture.last
        }

        /// A session client and a flow for DOT's `interop-oidc` client, from DOT's discovery document.
        static func flow(
            _ server: InteropServer, store: any TokenStore, transport: (any HTTPTransport)? = nil,
            clientID: String = DjangoOIDC.clientID
        ) async throws -> (AuthorizationCodeFlow, TokenRefreshClient, TokenEndpoint) {
            let transport = transport ?? RecordingTransport(server.transport)
            var metadata = try await AuthorizationServer.discover(
                issuer: server.baseURL.appending(path: "o"), transport: transport)
            // DOT's discovery document names no revocation endpoint; its RFC 7009 endpoint is there all the same.
            if metadata.revocationEndpoint == nil { metadata.revocationEndpoint = server.revokeURL }
            let client = OAuthClient(id: clientID)
            let endpoint = TokenEndpoint(url: metadata.tokenEndpoint, client: client, transport: transport)
            let tokens = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store)
            let flow = AuthorizationCodeFlow(
                server: metadata, client: client,
                configuration: .init(
                    redirectURI: redirectURI, scopes: ["openid"], postLogoutRedirectURI: postLogoutRedirectURI),
                tokens: tokens, transport: transport, idTokenStore: store)
            return (flow, tokens, endpoint)
        }

        @Test func aBrowserSignInThroughDOTStoresTheSessionAndShowsTheVerifiedUserThenLogsOutThere() async throws {
            let server = try await InteropServer.prepared()
            try await server.deleteDjangoSessions()
            let browser = DjangoSessionStack(server, store: InMemoryTokenStore(), followsRedirects: false)
            TestSecrets.shared.register(try await browser.signIn().accessToken, as: .credential)
            let store = InMemoryTokenStore()
            let (flow, tokens, endpoint) = try await Self.flow(server, store: store)

            let token = try await flow.signIn(using: DjangoBrowser(stack: browser))
            TestSecrets.shared.register(token)

            let user = try #require(tokens.currentUser)
            #expect(!user.id.isEmpty)
            #expect(user.name == "alice")
            #expect(user.email == "alice@interop.example")
            guard case .found = await store.load(account: tokens.configuration.account) else {
                Issue.record("no stored session")
                return
            }
            let refreshToken = try #require(token.refreshToken)

            // RP-initiated logout at DOT, with the refresh token revoked first.
            try await flow.signOut(using: DjangoBrowser(stack: browser))
            #expect(tokens.currentToken == nil)
            guard case .absent = await store.load(account: tokens.configuration.account) else {
                Issue.record("the session was not removed")
                return
            }
            await #expect(throws: TokenRefreshError.refreshTokenRejected) {
                try await endpoint.requestToken([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
            }
            // DOT's session ended too: its authorization endpoint sends the browser to the login page now.
            let (again, _) = try await browser.api.executeWithAutoRetry(
                server.request(.get, "/o/authorize/?client_id=\(DjangoOIDC.clientID)&response_type=code"))
            #expect(again.status.code == 302)
            #expect(again.headerFields[.location]?.contains("/session/login") == true)
        }

        @Test func eachFailureGivesItsOwnErrorAndNoSession() async throws {
            let server = try await InteropServer.prepared()
            try await server.deleteDjangoSessions()
            let browser = DjangoSessionStack(server, store: InMemoryTokenStore(), followsRedirects: false)
            TestSecrets.shared.register(try await browser.signIn().accessToken, as: .credential)
            let agent = DjangoBrowser(stack: browser)

            // A wrong state: DOT's redirect for one sign-in handed to another.
            do {
                let store = InMemoryTokenStore()
                let (flow, tokens, _) = try await Self.flow(server, store: store)
                let first = try await flow.start()
                let second = try await flow.start()
                let redirect = try await agent.authorize(second.url, redirectURI: Self.redirectURI)
                await #expect(throws: SignInError.stateMismatch) {
                    try await flow.finish(redirect: redirect, for: first)
                }
                #expect(tokens.currentToken == nil)
            }
            // A replayed code: the redirect again after success, and the raw code again at DOT.
            do {
                let (flow, tokens, endpoint) = try await Self.flow(server, store: InMemoryTokenStore())
                let request = try await flow.start()
                let redirect = try await agent.authorize(request.url, redirectURI: Self.redirectURI)
                TestSecrets.shared.register(try await flow.finish(redirect: redirect, for: request))
                try await tokens.signOut()
                await #expect(throws: SignInError.unknownFlight) {
                    try await flow.finish(redirect: redirect, for: request)
                }
                let code = try #require(
                    URLComponents(url: redirect, resolvingAgainstBaseURL: false)?.queryItems?
                        .first { $0.name == "code" }?.value)
                await #expect(throws: TokenRefreshError.signInRejected) {
                    try await endpoint.requestToken(
                        [
                            ("grant_type", "authorization_code"), ("code", code),
                            ("redirect_uri", Self.redirectURI.absoluteString),
                            ("code_verifier", String(repeating: "v", count: 43)),
                        ],
                        isSignIn: true)
                }
                #expect(tokens.currentToken == nil)
            }
            // A nonce mismatch: an ID token from an earlier sign-in swapped into the token response.
            do {
                let replayed = try #require(await Self.idTokenOfAnEarlierSignIn(server, agent: agent))
                let swapping = IDTokenSwap(RecordingTransport(server.transport), idToken: replayed)
                let (flow, tokens, _) = try await Self.flow(server, store: InMemoryTokenStore(), transport: swapping)
                await #expect(throws: SignInError.nonceMismatch) { try await flow.signIn(using: agent) }
                #expect(tokens.currentToken == nil)
            }
            // An ID token for another audience: DOT's ID token for `interop-oidc` swapped into the answer to a sign-in
            // of `interop-oidc-other`, another client of the same server.
            do {
                let foreign = try #require(await Self.idTokenOfAnEarlierSignIn(server, agent: agent))
                let swapping = IDTokenSwap(RecordingTransport(server.transport), idToken: foreign)
                let (flow, tokens, _) = try await Self.flow(
                    server, store: InMemoryTokenStore(), transport: swapping, clientID: "interop-oidc-other")
                let error = await #expect(throws: SignInError.self) { try await flow.signIn(using: agent) }
                #expect(error == .idTokenRejected)
                #expect((error?.underlying as? TokenVerificationError) == .audienceMismatch)
                #expect(tokens.currentToken == nil)
            }
            // A denied consent.
            do {
                let (flow, tokens, _) = try await Self.flow(server, store: InMemoryTokenStore())
                await #expect(throws: SignInError.accessDenied) {
                    try await flow.signIn(using: DjangoBrowser(stack: browser, denies: true))
                }
                #expect(tokens.currentToken == nil)
            }
        }
    }
}

/// Replaces the `id_token` of every token response with one given (an attacker replaying an earlier ID token).
final class IDTokenSwap: HTTPTransport {
    private let base: any HTTPTransport
    private let idToken: String

    init(_ base: any HTTPTransport, idToken: String) {
        self.base = base
        self.idToken = idToken
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let (response, data) = try await base.send(request, body: body)
        guard var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], object["id_token"] != nil
        else { return (response, data) }
        object["id_token"] = idToken
        return (response, try JSONSerialization.data(withJSONObject: object))
    }
}
