import AuthToken
import Foundation
import Persistence
import SignInTestSupport
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

@testable import TokenKitSignIn

@Suite(.logLeakCheck())
struct AuthorizationCodeFlowTests {
    @Test func aBrowserSignInStoresTheSessionWithTheVerifiedProfile() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)

        let token = try await rig.flow.signIn(using: rig.browser, prompt: "login", loginHint: "ada@example.com")

        #expect(token.refreshToken != nil)
        #expect(await rig.hasStoredSession())
        let user = try #require(rig.tokens.currentUser)
        #expect(user.id == "user-ada")
        #expect(user.name == "Ada Lovelace")
        #expect(user.firstName == "Ada")
        #expect(user.email == "ada@example.com")
        #expect(user.imageURL == "https://id.example.com/ada.png")
        #expect(user.sessionID == "session-1")
        let query = try #require(rig.provider.snapshot.authorizationQueries.first)
        #expect(query["response_type"] == "code")
        #expect(query["client_id"] == FakeOpenIDProvider.clientID)
        #expect(query["redirect_uri"] == rig.redirectURI.absoluteString)
        #expect(query["scope"] == "openid profile email")
        #expect(query["code_challenge_method"] == "S256")
        #expect(query["code_challenge"]?.count == 43)
        #expect((query["state"]?.count ?? 0) >= 43)
        #expect((query["nonce"]?.count ?? 0) >= 43)
        #expect(query["prompt"] == "login")
        #expect(query["login_hint"] == "ada@example.com")
    }

    @Test func spacesInTheAuthorizationURLArePercentEncodedForServersThatDoNotReadPlusAsSpace() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let url = try await rig.flow.start(loginHint: "Ada Lovelace+1@example.com").url
        let query = try #require(url.query(percentEncoded: true))
        // Booleans only: a failure must not print the query, which holds the state and the nonce.
        let scopeEncoded = query.contains("scope=openid%20profile%20email")
        let hintEncoded = query.contains("login_hint=Ada%20Lovelace%2B1%40example.com")
        let hasPlus = query.contains("+")
        #expect(scopeEncoded)
        #expect(hintEncoded)
        #expect(!hasPlus)
    }

    @Test func eachSignInSendsItsOwnStateNonceAndChallenge() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let first = FakeOpenIDProvider.query(try await rig.flow.start().url)
        let second = FakeOpenIDProvider.query(try await rig.flow.start().url)
        #expect(first["state"] != second["state"])
        #expect(first["nonce"] != second["nonce"])
        #expect(first["code_challenge"] != second["code_challenge"])
    }

    @Test func extraParametersGoWithTheRequestButCannotReplaceTheFlowsOwn() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let flow = AuthorizationCodeFlow(
            server: rig.provider.server, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            configuration: .init(
                redirectURI: rig.redirectURI, scopes: ["openid", "offline_access"],
                additionalParameters: ["audience": "https://api.example.com", "state": "attacker-chosen"]),
            tokens: rig.tokens, transport: rig.provider, now: clock.wallClock)
        let query = FakeOpenIDProvider.query(try await flow.start().url)
        #expect(query["audience"] == "https://api.example.com")
        #expect(query["state"] != "attacker-chosen")
        #expect(query["scope"] == "openid offline_access")
    }

    @Test func thePushedAuthorizationRequestCarriesTheParametersWhenTheServerOffersIt() async throws {
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        behaviour.offersPAR = true
        let rig = SignInRig(now: clock.wallClock, clock: clock, behaviour: behaviour)

        let request = try await rig.flow.start()
        let query = FakeOpenIDProvider.query(request.url)
        #expect(Set(query.keys) == ["client_id", "request_uri"])
        let pushed = try #require(rig.provider.snapshot.pushedBodies.first)
        #expect(pushed["code_challenge_method"] == "S256")
        #expect(pushed["state"] != nil)
        #expect(pushed["nonce"] != nil)

        try await rig.flow.finish(redirect: rig.provider.approve(request.url), for: request)
        #expect(rig.tokens.currentUser?.email == "ada@example.com")
    }

    @Test func aDeniedConsentIsAccessDeniedAndStoresNothing() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        await #expect(throws: SignInError.accessDenied) {
            try await rig.flow.signIn(using: ProviderBrowser(provider: rig.provider, deny: true))
        }
        #expect(!(await rig.hasStoredSession()))
        #expect(rig.codeExchanges == 0)
        #expect(rig.tokens.currentToken == nil)
    }

    @Test(arguments: ["login_required", "consent_required", "invalid_scope", "server_error"])
    func anErrorAnswerKeepsTheServersCode(_ code: String) async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = FakeOpenIDProvider.url(
            rig.redirectURI.absoluteString,
            [("error", code), ("state", request.state), ("iss", FakeOpenIDProvider.issuer)])
        let error = await #expect(throws: SignInError.self) {
            try await rig.flow.finish(redirect: redirect, for: request)
        }
        #expect(error == .authorizationFailed)
        #expect(error?.oauthError == code)
    }

    @Test func anErrorCodeThatIsNotAPlainNameIsNotRepeated() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = FakeOpenIDProvider.url(
            rig.redirectURI.absoluteString,
            [("error", "Bearer secret-echoed-back"), ("state", request.state), ("iss", FakeOpenIDProvider.issuer)])
        let error = await #expect(throws: SignInError.self) {
            try await rig.flow.finish(redirect: redirect, for: request)
        }
        #expect(error?.oauthError == "invalid_error_code")
        #expect(!"\(String(describing: error))".contains("secret-echoed-back"))
    }

    @Test func theUserClosingTheBrowserIsCancelledAndEndsTheFlight() async throws {
        struct ClosingBrowser: AuthorizationUserAgent {
            func authorize(_ url: URL, redirectURI: URL) async throws -> URL { throw SignInError.cancelled }
        }
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        await #expect(throws: SignInError.cancelled) { try await rig.flow.signIn(using: ClosingBrowser()) }
        #expect(rig.tokens.currentToken == nil)
    }

    @Test func aRedirectAfterTheFlightsLifetimeIsRefused() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = rig.provider.approve(request.url)
        clock.advance(by: .seconds(601))
        await #expect(throws: SignInError.unknownFlight) { try await rig.flow.finish(redirect: redirect, for: request) }
        #expect(rig.codeExchanges == 0)
    }

    @Test func theNewestSixteenSignInsStayOpenAndOlderOnesAreForgotten() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let first = try await rig.flow.start()
        let firstRedirect = rig.provider.approve(first.url)
        var last = first
        for _ in 0..<16 {
            clock.advance(by: .seconds(1))
            last = try await rig.flow.start()
        }
        await #expect(throws: SignInError.unknownFlight) {
            try await rig.flow.finish(redirect: firstRedirect, for: first)
        }
        try await rig.flow.finish(redirect: rig.provider.approve(last.url), for: last)
        #expect(await rig.hasStoredSession())
    }

    @Test func withoutOpenIDTheSessionIsStoredWithoutAnIDTokenCheck() async throws {
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        behaviour.omitsIDToken = true
        let rig = SignInRig(now: clock.wallClock, clock: clock, behaviour: behaviour, scopes: ["api"])
        try await rig.flow.signIn(using: rig.browser)
        #expect(await rig.hasStoredSession())
        #expect(rig.provider.snapshot.authorizationQueries.first?["nonce"] == nil)
    }

    @Test func anOpenIDSignInWithoutAnIDTokenIsRefused() async throws {
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        behaviour.omitsIDToken = true
        let rig = SignInRig(now: clock.wallClock, clock: clock, behaviour: behaviour)
        await #expect(throws: SignInError.idTokenRejected) { try await rig.flow.signIn(using: rig.browser) }
        #expect(!(await rig.hasStoredSession()))
    }

    @Test func anExpiredIDTokenIsRefused() async throws {
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        behaviour.idTokenExpiresIn = -600
        let rig = SignInRig(now: clock.wallClock, clock: clock, behaviour: behaviour)
        await #expect(throws: SignInError.idTokenRejected) { try await rig.flow.signIn(using: rig.browser) }
        #expect(!(await rig.hasStoredSession()))
    }

    @Test func theProfileComesBackAtTheNextLaunchFromTheStoredIDToken() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        try await rig.flow.signIn(using: rig.browser)
        // The ID token's `exp` (10 minutes) has passed at the next launch; it is checked as of its arrival.
        clock.advance(by: .seconds(1200))

        let (relaunched, flow) = Self.relaunch(rig, clock: clock)
        #expect(await flow.restoreSession() == .signedIn(userID: "user-ada"))
        #expect(relaunched.currentUser?.email == "ada@example.com")
    }

    /// A relaunch of `rig`'s session: a new session client and flow over the same store.
    private static func relaunch(_ rig: SignInRig, clock: ManualClock) -> (TokenRefreshClient, AuthorizationCodeFlow) {
        let relaunched = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: rig.endpoint), store: rig.store, clock: clock,
            now: clock.wallClock)
        let flow = AuthorizationCodeFlow(
            server: rig.provider.server, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            configuration: .init(redirectURI: rig.redirectURI), tokens: relaunched, transport: rig.provider,
            idTokenStore: rig.store, now: clock.wallClock)
        return (relaunched, flow)
    }

    /// Ada's ID token claims, with another name, signed by a key the provider never published.
    private static func forgedIDToken(_ rig: SignInRig, clock: ManualClock) -> String {
        let issued = clock.date.timeIntervalSince1970
        let forged = rig.provider.sign(
            [
                "iss": FakeOpenIDProvider.issuer, "sub": "user-ada", "aud": [FakeOpenIDProvider.clientID],
                "iat": issued, "exp": issued + 600, "name": "Mallory Forged", "email": "mallory@example.com",
            ], with: rig.provider.unpublishedKey)
        TestSecrets.shared.register(forged, as: .idToken)
        return forged
    }

    @Test func aStoredIDTokenThatDoesNotVerifySuppliesNoProfileAtTheNextLaunch() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        try await rig.flow.signIn(using: rig.browser)
        // Someone who can write the store puts an ID token of their own beside the session.
        let forged = Self.forgedIDToken(rig, clock: clock)
        try await rig.store.save(
            StoredSession(
                token: AuthToken(accessToken: forged, receivedAt: clock.date), userID: "user-ada", generation: 0),
            account: rig.tokens.configuration.account + ".id_token", condition: .always)

        let (relaunched, flow) = Self.relaunch(rig, clock: clock)
        #expect(await flow.restoreSession() == .signedIn(userID: "user-ada"))
        #expect(relaunched.currentUser?.id == "user-ada")
        #expect(relaunched.currentUser?.name != "Mallory Forged")
        #expect(relaunched.currentUser?.email == nil)
    }

    @Test func anIDTokenThatArrivesWithARefreshDoesNotReplaceTheVerifiedProfile() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let token = try await rig.flow.signIn(using: rig.browser)
        #expect(rig.tokens.currentUser?.name == "Ada Lovelace")
        // The refresh answer carries a same-user ID token that no key of the server signed.
        rig.provider.update {
            $0.behaviour.signsIDTokensWithUnpublishedKey = true
            $0.behaviour.idTokenName = "Mallory Forged"
        }

        let refreshed = try await rig.tokens.refreshToken(afterRejectionOf: token.accessToken)

        #expect(refreshed.accessToken != token.accessToken)
        #expect(rig.tokens.currentUser?.id == "user-ada")
        #expect(rig.tokens.currentUser?.name == "Ada Lovelace")
        #expect(rig.tokens.currentUser?.email == "ada@example.com")
    }

    // MARK: - Sign-out at the provider

    @Test func signingOutEndsTheSessionRevokesTheRefreshTokenAndLogsOutAtTheProvider() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        try await rig.flow.signIn(using: rig.browser)
        let refreshToken = try #require(rig.tokens.currentToken?.refreshToken)

        try await rig.flow.signOut(using: rig.browser)

        #expect(rig.tokens.currentToken == nil)
        #expect(!(await rig.hasStoredSession()))
        #expect(rig.provider.snapshot.revoked == [refreshToken])
        let logout = try #require(rig.provider.snapshot.logoutQueries.first)
        #expect(logout["id_token_hint"]?.split(separator: ".").count == 3)
        #expect(logout["post_logout_redirect_uri"] == "com.example.app:/oauth/signed-out")
        #expect(logout["client_id"] == FakeOpenIDProvider.clientID)
        #expect(logout["state"] != nil)
        // The revoked refresh token is dead at the server.
        await #expect(throws: TokenRefreshError.refreshTokenRejected) {
            try await rig.endpoint.requestToken([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
        }
    }

    @Test func signingOutWithoutABrowserStillEndsTheSessionAndRevokes() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        try await rig.flow.signIn(using: rig.browser)
        try await rig.flow.signOut()
        #expect(rig.tokens.currentToken == nil)
        #expect(rig.provider.snapshot.revoked.count == 1)
        #expect(rig.provider.snapshot.logoutQueries.isEmpty)
    }

    // MARK: - Discovery

    @Test func discoveryReadsTheEndpointsAndIsCachedForItsMaxAge() async throws {
        DiscoveryCache.shared.removeAll()
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        behaviour.offersPAR = true
        let provider = FakeOpenIDProvider(now: clock.wallClock, behaviour: behaviour)
        let issuer = URL(string: FakeOpenIDProvider.issuer)!
        let server = try await AuthorizationServer.discover(issuer: issuer, transport: provider, now: clock.wallClock)
        #expect(server == provider.server)
        _ = try await AuthorizationServer.discover(issuer: issuer, transport: provider, now: clock.wallClock)
        #expect(provider.snapshot.discoveryFetches == 1)
        clock.advance(by: .seconds(301))
        _ = try await AuthorizationServer.discover(issuer: issuer, transport: provider, now: clock.wallClock)
        #expect(provider.snapshot.discoveryFetches == 2)
        DiscoveryCache.shared.removeAll()
    }

    @Test func aDiscoveryDocumentForAnotherIssuerIsRefused() throws {
        let body = Data(
            #"{"issuer":"https://evil.example.com","authorization_endpoint":"https://evil.example.com/a","token_endpoint":"https://evil.example.com/t"}"#
                .utf8)
        #expect(throws: SignInError.discoveryFailed) {
            try AuthorizationServer.parse(body, expectedIssuer: "https://id.example.com")
        }
    }

    @Test func aDiscoveryDocumentWithAPlainHTTPEndpointIsRefused() throws {
        let body = Data(
            #"{"issuer":"https://id.example.com","authorization_endpoint":"https://id.example.com/a","token_endpoint":"http://id.example.com/t"}"#
                .utf8)
        #expect(throws: SignInError.insecureURL) {
            try AuthorizationServer.parse(body, expectedIssuer: "https://id.example.com")
        }
    }

    // MARK: - Redaction

    @Test func descriptionsShowNoStateVerifierNonceOrCode() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let query = FakeOpenIDProvider.query(request.url)
        let text = "\(request) \(String(reflecting: request)) \(SignInError.stateMismatch)"
        for secret in [query["state"], query["nonce"], query["code_challenge"]].compactMap({ $0 }) {
            #expect(!text.contains(secret))
        }
    }
}

@Suite(.logLeakCheck())
struct SignInDumpTests {
    @Test func dumpingTheFlowARequestOrADeviceCodeShowsNoNonceStateVerifierOrDeviceCode() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let query = FakeOpenIDProvider.query(request.url)
        let device = DeviceAuthorization(
            url: rig.provider.server.deviceAuthorizationEndpoint!, tokenEndpoint: rig.endpoint, clock: clock)
        let code = try await device.start()
        var text = ""
        dump(rig.flow, to: &text)
        dump(request, to: &text)
        dump(code, to: &text)
        let secrets = [query["state"], query["nonce"], code.deviceCode].compactMap { $0 }
        #expect(secrets.count == 3)
        // Booleans only, so a failure never prints the secrets.
        let shown = secrets.filter { text.contains($0) }.count
        #expect(shown == 0)
        let showsUserCode = text.contains("WDJB-MJHT")
        #expect(showsUserCode)
    }
}
