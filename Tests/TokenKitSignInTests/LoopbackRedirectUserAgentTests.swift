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

    /// The README's command-line shape: a loopback agent and no post-logout redirect URI. The server follows
    /// RP-Initiated Logout 1.0 section 3 and sends nothing back to the listener.
    @Test func signingOutWithoutAPostLogoutURIOpensTheEndSessionPageAndReturns() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let agentClock = ManualClock()
        let signIn = Self.browser(rig.provider)
        let provider = rig.provider
        let browser = try LoopbackRedirectUserAgent(clock: agentClock) { url in
            guard url.path == "/logout" else { return try await signIn(url) }
            // The provider shows its logout page; without a post-logout URI it redirects nowhere.
            provider.update { $0.logoutQueries.append(FakeOpenIDProvider.query(url)) }
        }
        let flow = AuthorizationCodeFlow(
            server: provider.server, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            configuration: .init(redirectURI: browser.redirectURI), tokens: rig.tokens, transport: provider,
            now: clock.wallClock)
        try await flow.signIn(using: browser)
        #expect(rig.tokens.currentUser?.email == "ada@example.com")

        let signOut = Task { try await flow.signOut(using: browser) }
        // Either the sign-out returns, or it waits for a redirect that never comes (its timeout on the clock).
        let outcome = await Self.first(
            {
                _ = try? await signOut.value; return "returned"
            },
            {
                await agentClock.waitForSleepers(count: 1); return "waiting for a redirect"
            })
        // Release whatever still waits: the agent's timeout, and the watcher of the clock.
        let dummy = Task { try? await agentClock.sleep(for: .seconds(1)) }
        await agentClock.waitForSleepers(count: outcome == "returned" ? 1 : 2)
        agentClock.advance(by: .seconds(601))
        await dummy.value
        try await signOut.value

        #expect(outcome == "returned")
        #expect(rig.provider.snapshot.logoutQueries.count == 1)
        #expect(rig.provider.snapshot.logoutQueries.first?["post_logout_redirect_uri"] == nil)
        #expect(rig.tokens.currentUser == nil)
        #expect(!(await rig.hasStoredSession()))
    }

    @Test func aRequestWithAnotherStateGetsAnErrorPageAndTheSignInGoesOn() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let probes = SignInTestSupport.Locked<[Int]>([])
        let agent = try LoopbackRedirectUserAgent { url in
            let redirect = rig.provider.approve(url)
            let session = URLSession(configuration: .ephemeral)
            // Another process (or a web page probing local ports) gets there first: a wrong state, and none.
            var forged = URLComponents(url: redirect, resolvingAgainstBaseURL: false)!
            forged.queryItems = forged.queryItems?.map {
                $0.name == "state" ? URLQueryItem(name: "state", value: "forged") : $0
            }
            var stateless = URLComponents(url: redirect, resolvingAgainstBaseURL: false)!
            stateless.queryItems = [URLQueryItem(name: "code", value: "probe")]
            for probe in [forged.url!, stateless.url!] {
                let (_, response) = try await session.data(from: probe)
                probes.withLock { $0.append((response as? HTTPURLResponse)?.statusCode ?? 0) }
            }
            Task { _ = try? await session.data(from: redirect) }
        }
        let flow = AuthorizationCodeFlow(
            server: rig.provider.server, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            configuration: .init(redirectURI: agent.redirectURI), tokens: rig.tokens, transport: rig.provider,
            now: clock.wallClock)

        try await flow.signIn(using: agent)

        #expect(probes.withLock { $0 } == [400, 400])
        #expect(await rig.hasStoredSession())
        #expect(rig.tokens.currentUser?.email == "ada@example.com")
        #expect(rig.codeExchanges == 1)
    }

    @Test func aWaitWithoutARedirectEndsAtTheTimeout() async throws {
        let clock = ManualClock()
        let agent = try LoopbackRedirectUserAgent(timeout: .seconds(30), clock: clock) { _ in }
        let wait = Task {
            try await agent.authorize(
                URL(string: "https://id.example.com/authorize?state=abc")!, redirectURI: agent.redirectURI)
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(29))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        await #expect(throws: SignInError.timedOut) { try await wait.value }
    }

    /// The value of whichever of two operations ends first (the other goes on in the background).
    private static func first(
        _ one: @escaping @Sendable () async -> String, _ other: @escaping @Sendable () async -> String
    ) async -> String {
        let result = SignInTestSupport.Locked<String?>(nil)
        return await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            for operation in [one, other] {
                Task {
                    let value = await operation()
                    let first = result.withLock { stored -> Bool in
                        guard stored == nil else { return false }
                        stored = value
                        return true
                    }
                    if first { continuation.resume(returning: value) }
                }
            }
        }
    }
}
