package import Foundation
import NetworkRetry
package import Persistence
package import TokenKitSignIn
package import TokenRefresh

/// A provider, a store, a session client and a flow wired together, for one test.
package struct SignInRig: Sendable {
    package let provider: FakeOpenIDProvider
    package let store: InMemoryTokenStore
    package let tokens: TokenRefreshClient
    package let flow: AuthorizationCodeFlow
    package let endpoint: TokenEndpoint
    package let redirectURI = URL(string: "com.example.app:/oauth/callback")!

    /// - Parameters:
    ///   - now: The wall clock (a manual clock's).
    ///   - clock: The clock for the session client.
    ///   - behaviour: How the provider misbehaves.
    ///   - scopes: The scopes asked for.
    package init(
        now: @escaping @Sendable () -> Date, clock: any Clock<Duration>,
        behaviour: FakeOpenIDProvider.Behaviour = .init(), scopes: [String] = ["openid", "profile", "email"]
    ) {
        provider = FakeOpenIDProvider(now: now, behaviour: behaviour)
        store = InMemoryTokenStore()
        endpoint = TokenEndpoint(
            url: provider.server.tokenEndpoint, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            transport: provider, now: now)
        tokens = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, clock: clock, now: now)
        flow = AuthorizationCodeFlow(
            server: provider.server, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            configuration: .init(
                redirectURI: redirectURI, scopes: scopes,
                postLogoutRedirectURI: URL(string: "com.example.app:/oauth/signed-out")!),
            tokens: tokens, transport: provider, idTokenStore: store, now: now)
    }

    /// The browser that signs in and consents.
    package var browser: ProviderBrowser { ProviderBrowser(provider: provider) }

    /// Whether the store holds a session for the default account.
    package func hasStoredSession() async -> Bool {
        if case .found = await store.load(account: tokens.configuration.account) { return true }
        return false
    }

    /// How many code exchanges reached the token endpoint.
    package var codeExchanges: Int {
        provider.snapshot.tokenRequests.filter { $0["grant_type"] == "authorization_code" }.count
    }
}
