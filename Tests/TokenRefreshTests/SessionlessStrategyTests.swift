import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// Strategies that need no refresh token (an SDK's `getToken()`, client credentials) follow the same session
/// rules as the others: a rejection ends the session once, and a connectivity error counts as offline.
@Suite(.logLeakCheck()) struct SessionlessStrategyTests {
    /// A closure strategy that answers from a queue of outcomes.
    final class Script: Sendable {
        let outcomes = Locked<[Result<TokenResponse, any Error>]>([])
        let calls = Locked(0)

        func push(_ outcome: Result<TokenResponse, any Error>) {
            if case .success(let response) = outcome {
                TestSecrets.shared.register(response.accessToken, as: .accessToken)
                if let refresh = response.refreshToken { TestSecrets.shared.register(refresh, as: .refreshToken) }
            }
            outcomes.withLock { $0.append(outcome) }
        }

        var strategy: ClosureRefreshStrategy {
            ClosureRefreshStrategy { _ in
                self.calls.withLock { $0 += 1 }
                let next = self.outcomes.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let next else { throw TokenRefreshError.transient }
                return try next.get()
            }
        }
    }

    func client(_ script: Script, clock: ManualClock) -> TokenRefreshClient {
        TokenRefreshClient(
            strategy: script.strategy,
            configuration: .init(backoff: .init(retries: 0)), clock: clock, now: clock.wallClock)
    }

    /// The client used to stay signed in and keep handing out the rejected token.
    @Test func aRejectionFromASessionlessClosureEndsTheSessionOnce() async throws {
        let clock = ManualClock()
        let script = Script()
        script.push(.success(TokenResponse(accessToken: "sdk-token-first-x6", expiresIn: 60)))
        script.push(.failure(TokenRefreshError.refreshTokenRejected))
        let client = client(script, clock: clock)
        let events = client.events()
        let first = try await client.validToken()
        #expect(client.currentState.hasSession)

        let error = await refreshError { try await client.refreshToken(afterRejectionOf: first.accessToken) }
        #expect(error == .refreshTokenRejected)
        #expect(client.currentState == .signedOut)
        #expect(client.currentToken == nil)
        // The rejected token is never handed out again.
        let again = try? await client.validToken()
        #expect(again?.accessToken != first.accessToken)

        var signedOut: [AuthEvent] = []
        for await event in events {
            if event.kind == .signedOut { signedOut.append(event) }
            if event.kind == .signedOut || event.kind == .signedIn && signedOut.count == 1 { break }
        }
        #expect(signedOut.count == 1)
        #expect(signedOut.first?.reason == .revoked)
        #expect(signedOut.first?.error == .refreshTokenRejected)
    }

    @Test(arguments: [
        URLError(.notConnectedToInternet) as any Error & Sendable, URLError(.networkConnectionLost),
        URLError(.cannotFindHost), URLError(.timedOut), POSIXError(.ECONNREFUSED),
    ])
    func aConnectivityErrorFromAClosureCountsAsOffline(_ failure: any Error & Sendable) async throws {
        let clock = ManualClock()
        let script = Script()
        script.push(.success(TokenResponse(accessToken: "sdk-token-first-x6", expiresIn: 60)))
        script.push(.failure(failure))
        let client = client(script, clock: clock)
        let first = try await client.validToken()
        let error = await refreshError { try await client.refreshToken(afterRejectionOf: first.accessToken) }
        #expect(error?.isTransient == true)
        #expect(error?.isConnectivityFailure == true)
        #expect(client.isOfflineNow)
        #expect(client.currentState.hasSession)
    }

    @Test func anErrorThatIsNotAboutConnectivityIsTransientButNotOffline() async throws {
        struct SDKGlitch: Error {}
        let clock = ManualClock()
        let script = Script()
        script.push(.success(TokenResponse(accessToken: "sdk-token-first-x6", expiresIn: 60)))
        script.push(.failure(SDKGlitch()))
        let client = client(script, clock: clock)
        let first = try await client.validToken()
        let error = await refreshError { try await client.refreshToken(afterRejectionOf: first.accessToken) }
        #expect(error?.isTransient == true)
        #expect(error?.isConnectivityFailure == false)
        #expect(!client.isOfflineNow)
    }

    @Test func aRejectionFromARefreshTokenClosureStillEndsTheSessionOnce() async throws {
        let rig = try await Rig.make(strategy: { _ in
            ClosureRefreshStrategy(requiresRefreshToken: true) { _ in throw TokenRefreshError.refreshTokenRejected }
        })
        let error = await refreshError { try await rig.client.validToken() }
        #expect(error == .refreshTokenRejected)
        #expect(rig.client.currentState == .signedOut)
        #expect(await rig.stored() == nil)
    }
}
