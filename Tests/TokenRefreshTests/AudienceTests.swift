import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

/// One session, one access token per API: clients made by `TokenRefreshClient.sharingSession(audiences:)` over a
/// server with resource indicators and rotating refresh tokens with reuse detection.
@Suite(.logLeakCheck()) struct AudienceTests {
    static let billing = "https://billing.example.com"
    static let profile = "https://profile.example.com"

    struct Setup {
        let clock: ManualClock
        let server: AudienceServer
        let store: RecordingStore
        let clients: [String: TokenRefreshClient]
        var billing: TokenRefreshClient { clients["billing"]! }
        var profile: TokenRefreshClient { clients["profile"]! }

        static func make(signIn: Bool = true) async throws -> Setup {
            let clock = ManualClock()
            let server = AudienceServer(now: clock.wallClock)
            let store = RecordingStore()
            let endpoint = TokenEndpoint(
                url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
            let clients = TokenRefreshClient.sharingSession(
                audiences: [
                    "billing": OAuthRefreshStrategy(
                        endpoint: endpoint, scope: "billing:read", resource: URL(string: AudienceTests.billing)!),
                    "profile": OAuthRefreshStrategy(endpoint: endpoint, resource: URL(string: AudienceTests.profile)!),
                ], store: store, configuration: .init(account: account), clock: clock, now: clock.wallClock,
                random: { 0.5 })
            let setup = Setup(clock: clock, server: server, store: store, clients: clients)
            if signIn {
                let pair = await server.signIn(resource: AudienceTests.billing)
                try await setup.billing.signIn(with: pair, userID: "alice")
            }
            return setup
        }

        func stored() async -> StoredSession? {
            if case .found(let session) = await store.base.load(account: account) { return session }
            return nil
        }
    }

    static func audience(of token: AuthToken) -> [String] {
        token.claims?.audience ?? []
    }

    /// The refresh grant names the API: `resource` (RFC 8707), or `audience` for servers that take that.
    @Test func theRefreshGrantAsksForTheResourceOrAudienceAndScope() async throws {
        let clock = ManualClock()
        let server = AudienceServer(now: clock.wallClock)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
        var pair = await server.signIn(resource: Self.billing)
        let byResource = OAuthRefreshStrategy(
            endpoint: endpoint, scope: "invoices:read", resource: URL(string: Self.billing)!)
        let answer = try await byResource.refresh(using: pair.refreshToken)
        pair = answer.token(receivedAt: clock.date)
        #expect(pair.claims?.audience == [Self.billing])
        let byAudience = OAuthRefreshStrategy(endpoint: endpoint, audience: Self.profile)
        let second = try await byAudience.refresh(using: pair.refreshToken).token(receivedAt: clock.date)
        #expect(second.claims?.audience == [Self.profile])
        let requests = await server.requests
        #expect(requests.first?["resource"] == Self.billing)
        #expect(requests.first?["scope"] == "invoices:read")
        #expect(requests.first?["audience"] == nil)
        #expect(requests.last?["audience"] == Self.profile)
        #expect(requests.last?["resource"] == nil)
    }

    /// A resource that is not an absolute URI, or has a fragment, is refused before anything is sent (RFC 8707
    /// section 2).
    @Test(arguments: ["billing", "https://billing.example.com/#part"])
    func aResourceThatIsNotAnAbsoluteURIWithoutAFragmentIsRefused(resource: String) async throws {
        let clock = ManualClock()
        let server = AudienceServer(now: clock.wallClock)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
        let pair = await server.signIn(resource: Self.billing)
        let strategy = OAuthRefreshStrategy(endpoint: endpoint, resource: try #require(URL(string: resource)))
        await #expect(throws: TokenRefreshError.invalidArgument) {
            try await strategy.refresh(using: pair.refreshToken)
        }
        #expect(await server.presented.isEmpty)
    }

    /// 100 callers for each of two APIs at one expiry.
    @Test func twoAPIsAtOneExpiryRefreshOnceEachAndStoreEveryRotationOnce() async throws {
        let setup = try await Setup.make()
        // Both APIs hold a token (the profile API's first refresh), then both expire together.
        _ = try await setup.billing.validToken()
        _ = try await setup.profile.validToken()
        #expect(await setup.server.refreshes == [Self.profile: 1])
        setup.clock.advance(by: .seconds(7200))

        let results = try await withThrowingTaskGroup(of: (String, AuthToken).self) { group in
            for index in 0..<200 {
                let key = index.isMultiple(of: 2) ? "billing" : "profile"
                let client = setup.clients[key]!
                group.addTask { (key, try await client.validToken()) }
            }
            return try await group.reduce(into: [(String, AuthToken)]()) { $0.append($1) }
        }

        let server = setup.server
        #expect(await server.refreshes == [Self.billing: 1, Self.profile: 2])
        #expect(await server.reuseDetections == 0)
        let presented = await server.presented
        #expect(Set(presented).count == presented.count, "a refresh token was presented twice")
        #expect(results.count == 200)
        for (key, token) in results {
            let expected = key == "billing" ? Self.billing : Self.profile
            #expect(Self.audience(of: token) == [expected], "a \(key) caller got another API's token")
            #expect(!token.isExpired(at: setup.clock.date))
        }
        #expect(Set(results.filter { $0.0 == "billing" }.map(\.1.accessToken)).count == 1)
        #expect(Set(results.filter { $0.0 == "profile" }.map(\.1.accessToken)).count == 1)
        // Every rotated refresh token was stored exactly once, in the order the server issued them, and the store
        // holds the live one.
        let issued = await server.issued
        let saved = await setup.store.savedRefreshTokens
        #expect(saved == issued.map(Optional.some))
        let stored = try #require(await setup.stored())
        #expect(await server.isCurrent(stored.token.refreshToken))
        #expect(stored.userID == "alice")
        // The billing refresh asked for its own resource and scope, the profile one for its resource only.
        let requests = await server.requests
        #expect(requests.contains { $0["resource"] == Self.billing && $0["scope"] == "billing:read" })
        #expect(requests.filter { $0["resource"] == Self.profile }.allSatisfy { $0["scope"] == nil })
    }

    /// The stored session's access-token field is never an access token: a client of the same account that is not
    /// one of the audience clients refreshes rather than handing it out.
    @Test func theStoredSessionIsExpiredForAClientThatIsNotAnAudienceClient() async throws {
        let setup = try await Setup.make()
        let stored = try #require(await setup.stored())
        #expect(stored.token.isExpired(at: setup.clock.date))
        #expect(stored.token.claims == nil)
    }

    /// An API whose client has no token yet refreshes for itself before answering.
    @Test func anAPIWithoutATokenRefreshesForItselfBeforeAnswering() async throws {
        let setup = try await Setup.make()
        let token = try await setup.profile.validToken()
        #expect(Self.audience(of: token) == [Self.profile])
        #expect(await setup.server.refreshes == [Self.profile: 1])
        // The billing client still answers with its own token, which the rotation did not touch.
        let billing = try await setup.billing.validToken()
        #expect(Self.audience(of: billing) == [Self.billing])
        #expect(await setup.server.refreshes == [Self.profile: 1])
        // Billing's next refresh presents the refresh token the profile refresh left.
        setup.clock.advance(by: .seconds(7200))
        _ = try await setup.billing.validToken()
        #expect(await setup.server.reuseDetections == 0)
        #expect(await setup.server.refreshes == [Self.profile: 1, Self.billing: 1])
    }

    /// Signing in with one client starts the session for all; signing out with one ends it for all.
    @Test func signInWithOneClientServesEveryAPIAndSignOutEndsThemAll() async throws {
        let setup = try await Setup.make(signIn: false)
        // The profile client has read "signed out" before the sign-in.
        await #expect(throws: TokenRefreshError.signedOut) { try await setup.profile.validToken() }
        let pair = await setup.server.signIn(resource: Self.billing)
        try await setup.billing.signIn(with: pair, userID: "alice")
        let profileToken = try await setup.profile.validToken()
        #expect(Self.audience(of: profileToken) == [Self.profile])

        try await setup.billing.signOut()
        #expect(await setup.stored() == nil)
        var states = setup.profile.states().makeAsyncIterator()
        while let state = await states.next(), state != .signedOut {}
        await #expect(throws: TokenRefreshError.signedOut) { try await setup.profile.validToken() }
    }

    /// A refresh token the profile client held before the billing client rotated it is never presented: the profile
    /// client re-reads the session under the shared access first.
    @Test func aRefreshTokenRotatedForOneAPIIsNeverPresentedForAnother() async throws {
        let setup = try await Setup.make()
        _ = try await setup.profile.validToken()  // profile holds the pair of the first rotation
        setup.clock.advance(by: .seconds(7200))
        _ = try await setup.billing.validToken()  // billing rotates again
        _ = try await setup.profile.validToken()  // profile must present billing's rotation, not its own
        #expect(await setup.server.reuseDetections == 0)
        #expect(await setup.server.refreshes == [Self.profile: 2, Self.billing: 1])
    }
}
