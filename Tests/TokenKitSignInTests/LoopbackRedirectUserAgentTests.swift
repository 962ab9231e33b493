import Foundation
import SignInTestSupport
import Testing
import TokenKitLogCheck
import TokenKitSignIn
import TokenKitTesting
import TokenRefresh

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.logLeakCheck())
struct LoopbackRedirectUserAgentTests {
    /// A browser: the provider answers the authorization URL, and the redirect is fetched from the loopback
    /// listener as a browser would follow it.
    private static func browser(_ provider: FakeOpenIDProvider) -> @Sendable (URL) async throws -> Void {
        { url in
            let redirect = provider.approve(url)
            let session = URLSession(configuration: .ephemeral)
            // Another path first: the listener answers 404 and keeps waiting.
            let stray = URL(
                string: redirect.absoluteString.replacingOccurrences(of: "/callback", with: "/favicon.ico"))!
            _ = try await session.data(from: stray)
            Task { _ = try? await session.data(from: redirect) }
        }
    }

    @Test func aSignInOverTheLoopbackRedirectStoresTheSession() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let agent = try LoopbackRedirectUserAgent(open: Self.browser(rig.provider))
        #expect(agent.redirectURI.absoluteString.hasPrefix("http://127.0.0.1:"))
        #expect(agent.redirectURI.path == "/callback")
        let flow = AuthorizationCodeFlow(
            server: rig.provider.server, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            configuration: .init(redirectURI: agent.redirectURI), tokens: rig.tokens, transport: rig.provider,
            now: clock.wallClock)

        try await flow.signIn(using: agent)

        #expect(await rig.hasStoredSession())
        #expect(rig.tokens.currentUser?.email == "ada@example.com")
        #expect(rig.provider.snapshot.authorizationQueries.first?["redirect_uri"] == agent.redirectURI.absoluteString)
    }

    @Test func cancellingTheWaitEndsItAsCancelled() async throws {
        let agent = try LoopbackRedirectUserAgent { _ in }
        let wait = Task {
            try await agent.authorize(URL(string: "https://id.example.com/authorize")!, redirectURI: agent.redirectURI)
        }
        wait.cancel()
        await #expect(throws: SignInError.cancelled) { try await wait.value }
    }
}
