import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// The rate breaker counts refresh requests sent to a server, and nothing else: SDK checks, launch checks,
/// `networkRestored()` and attempts that could not reach the server leave it alone.
@Suite(.logLeakCheck()) struct BreakerCountingTests {
    static let api = URL(string: "https://api.example.com")!

    static let invalidToken = MockTransport.Reply.response(
        status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])

    /// A client over the mock SDK with the default configuration (as `AuthClient.sdk` makes it), but no refresh
    /// timeout: its timer would be a sleeper on the manual clock beside the backoff's.
    static func sdkClient(
        tokenLifetime: TimeInterval = 60, backoff: TokenRefreshClient.Backoff = .init()
    ) -> (TokenRefreshClient, MockSessionProvider, ManualClock) {
        let clock = ManualClock()
        let sdk = MockSessionProvider(tokenLifetime: tokenLifetime, now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: sdk.strategy, configuration: .init(refreshTimeout: nil, backoff: backoff), clock: clock,
            now: clock.wallClock, random: { 0.5 })
        return (client, sdk, clock)
    }

    static func request(_ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: path)
    }

    @Test func sevenSDKChangeCallbacksThenAnSDKSignOutReadSignedOut() async throws {
        let (client, sdk, clock) = Self.sdkClient()
        sdk.signIn(.init(id: "user_2checks"))
        for _ in 0..<7 {
            #expect(await client.restoreSession(validatingWithProvider: true) == .signedIn(userID: "user_2checks"))
            clock.advance(by: .seconds(1))
        }
        sdk.signOut()
        #expect(await client.restoreSession(validatingWithProvider: true) == .signedOut)
        #expect(client.currentState == .signedOut)
    }

    @Test func aLaunchCheckAnOfflineRequestAndNetworkRestoredLeaveThe401ItsRefresh() async throws {
        // Tokens that live 20 s, so the request falls due within the breaker's window of the launch check.
        let (client, sdk, clock) = Self.sdkClient(tokenLifetime: 20)
        sdk.signIn(.init(id: "user_2window"))
        let offline = URLError(.notConnectedToInternet)
        let transport = MockTransport(script: [.failure(offline), Self.invalidToken, .response(status: .ok)])
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(allowedOrigins: [HTTPOrigin(Self.api)].compactMap { $0 }))
        #expect(await client.restoreSession(validatingWithProvider: true) == .signedIn(userID: "user_2window"))
        clock.advance(by: .seconds(15))  // due, not yet expired
        sdk.goOffline()
        let request = Task { try await api.executeWithAutoRetry(Self.request("/food-logs")) }
        for _ in 0..<2 {  // the default backoff: two retries, each under a second
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(1))
        }
        await #expect(throws: (any Error).self) { try await request.value }
        sdk.comeOnline()
        #expect(await client.networkRestored() == .signedIn(userID: "user_2window"))
        let forcedBefore = sdk.forcedTokenCalls
        let (response, _) = try await api.executeWithAutoRetry(Self.request("/food-logs"))
        #expect(response.status == .ok)
        #expect(sdk.forcedTokenCalls == forcedBefore + 1)
    }

    @Test(.timeLimit(.minutes(1))) func withTheWindowFullAnOfflineExpiryReadsExpired() async throws {
        // No retries, as the Clerk example: an SDK that is offline says so at once.
        let (client, sdk, clock) = Self.sdkClient(tokenLifetime: 20, backoff: .init(retries: 0))
        sdk.signIn(.init(id: "user_2full"))
        var token = try await client.validToken()
        // Five 401s, each cured by a refresh the SDK sends to its server: the window is full.
        for _ in 0..<5 {
            token = try await client.refreshToken(afterRejectionOf: token.accessToken)
            clock.advance(by: .seconds(1))
        }
        let sixth = await refreshError { try await client.refreshToken(afterRejectionOf: token.accessToken) }
        #expect(sixth == .rateLimited)
        // Offline, with SDK change callbacks meanwhile, until the token has expired.
        sdk.goOffline()
        for _ in 0..<4 {
            clock.advance(by: .seconds(5))
            await client.restoreSession(validatingWithProvider: true)
        }
        #expect(clock.date > token.claims!.expiration!)
        #expect(await refreshError { try await client.validToken() }?.isConnectivityFailure == true)
        #expect(client.currentState == .expired(lastUserID: "user_2full"))
    }

    @Test func anOAuthAttemptThatCouldNotReachTheServerIsNotCounted() async throws {
        let offline = Locked(false)
        let rig = try await Rig.make(
            configuration: .init(refreshTimeout: nil, maximumRefreshes: 2, backoff: .init(retries: 0)),
            expired: false,
            strategy: { endpoint in
                let oauth = OAuthRefreshStrategy(endpoint: endpoint)
                return ClosureRefreshStrategy(requiresRefreshToken: true) { refreshToken in
                    if offline.withLock({ $0 }) {
                        throw NetworkRetryError.cannotConnect.with(underlying: URLError(.notConnectedToInternet))
                    }
                    return try await oauth.refresh(using: refreshToken)
                }
            })
        var token = try await rig.client.validToken()
        offline.withLock { $0 = true }
        for _ in 0..<4 {
            let error = await refreshError { try await rig.client.refreshToken(afterRejectionOf: token.accessToken) }
            #expect(error?.isConnectivityFailure == true)
            _ = await rig.client.networkRestored()  // forgets the backoff
        }
        offline.withLock { $0 = false }
        token = try await rig.client.refreshToken(afterRejectionOf: token.accessToken)
        token = try await rig.client.refreshToken(afterRejectionOf: token.accessToken)
        #expect(await rig.server.refreshCount == 2)
        // The two sent fill the window.
        let third = await refreshError { try await rig.client.refreshToken(afterRejectionOf: token.accessToken) }
        #expect(third == .rateLimited)
    }

    @Test func anAttemptThatMayHaveReachedTheServerIsCounted() {
        let timedOut = TokenRefreshError.transient.with(underlying: URLError(.timedOut)).with(connectivityFailure: true)
        let lost = TokenRefreshError.transient.with(underlying: URLError(.networkConnectionLost))
        let offline = TokenRefreshError.transient.with(underlying: URLError(.notConnectedToInternet))
        let refused = TokenRefreshError.transient.with(
            underlying: NetworkRetryError.cannotConnect.with(underlying: POSIXError(.ECONNREFUSED)))
        #expect(!ErrorClassification.sentNothing(timedOut))
        #expect(!ErrorClassification.sentNothing(lost))
        #expect(!ErrorClassification.sentNothing(TokenRefreshError.timeout))
        #expect(!ErrorClassification.sentNothing(TokenRefreshError.transient.with(status: 503)))
        #expect(ErrorClassification.sentNothing(offline))
        #expect(ErrorClassification.sentNothing(refused))
        #expect(ErrorClassification.sentNothing(NetworkRetryError.cannotConnect))
        let reset = NetworkRetryError.cannotConnect.with(underlying: URLError(.networkConnectionLost))
        #expect(!ErrorClassification.sentNothing(reset))
    }

    @Test func aCookieSessionsLaunchChecksAndNetworkRestoredAreNotCounted() async throws {
        let server = CookieSessionTests.Server()
        let (client, strategy, _) = CookieSessionTests().client(server, transport: server.transport)
        try await client.signIn(
            strategy.signIn(path: "/api/auth/sign-in/username", body: CookieSessionTests.credentials))
        for _ in 0..<6 {
            #expect(await client.restoreSession(validatingWithProvider: true) == .signedIn(userID: "auth-user-1"))
        }
        for _ in 0..<2 { #expect(await client.networkRestored() == .signedIn(userID: "auth-user-1")) }
        // A 401 still gets its check with the server.
        let credential = try await client.validToken()
        _ = try await client.refreshToken(afterRejectionOf: credential.accessToken)
        #expect(server.checks.withLock { $0 } == 9)
    }

    // MARK: - A cached token handed back

    @Test func aTokenTheSDKHandsBackFromItsCacheKeepsTheExpiryOfItsExpClaim() async throws {
        let (client, sdk, clock) = Self.sdkClient(backoff: .init(retries: 0))
        sdk.signIn(.init(id: "user_2cached"))
        let first = try await client.validToken()  // minted now, `exp` 60 s on
        clock.advance(by: .seconds(45))  // due; the SDK's cache still holds it
        let again = try await client.validToken()
        #expect(again.accessToken == first.accessToken)
        #expect(again.expiresAt == first.claims?.expiration)
        sdk.goOffline()
        clock.advance(by: .seconds(11))  // 56 s: inside the 6-s leeway of `exp`
        #expect(await refreshError { try await client.validToken() }?.isConnectivityFailure == true)
        #expect(client.currentState == .expired(lastUserID: "user_2cached"))
    }
}
