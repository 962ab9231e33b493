import ClerkDemoSupport
import DemoAppSupport
import Foundation
import HTTPTypes
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// The app's code against TokenKitTesting's mock SDK provider, on a manual
/// clock; and the whole clerk-demo run against the in-process issuer and backend.
@Suite(.logLeakCheck()) struct ClerkAppTests {
    static let backend = URL(string: "https://api.example.com")!

    static let invalidToken = MockTransport.Reply.response(
        status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])

    @Test func theRootViewLoopSeesLaunchSignInA401OfflineAndRevocation() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let transport = MockTransport(script: [.response(status: .ok), Self.invalidToken, .response(status: .ok)])
        let app = ClerkApp(
            strategy: sdk.strategy, backendURL: Self.backend, transport: transport, clock: clock, now: clock.wallClock,
            signOutSDK: { sdk.signOut() })
        let log = StateLog(app.states(), report: nil)
        defer { log.task.cancel() }

        #expect(await app.checkSession() == .signedOut)
        sdk.signIn(.init(id: "user_2mock", firstName: "Ada"))
        #expect(await app.checkSession() == .signedIn(userID: "user_2mock"))
        #expect(try await app.request(.get, "/food-logs").0.status == .ok)
        // A 401: one forced call to the SDK, and the retry carries the new token.
        #expect(try await app.request(.get, "/food-logs").0.status == .ok)
        #expect(sdk.forcedTokenCalls == 1)
        let bearers = transport.requests.compactMap(\.bearerToken)
        #expect(bearers.count == 3)
        #expect(bearers[1] != bearers[2])
        // Offline across an expiry: kept as expired; back online: renewed.
        clock.advance(by: .seconds(61))
        sdk.goOffline()
        await #expect(throws: (any Error).self) { try await app.request(.get, "/food-logs") }
        #expect(app.auth.currentState == .expired(lastUserID: "user_2mock"))
        sdk.comeOnline()
        #expect(await app.networkRestored() == .signedIn(userID: "user_2mock"))
        // Revoked on the server: signed out once.
        sdk.revoke()
        clock.advance(by: .seconds(61))
        await #expect(throws: (any Error).self) { try await app.request(.get, "/food-logs") }
        #expect(app.auth.currentState == .signedOut)
        let states = await log.wait(for: 6)
        #expect(
            states == [
                .loading, .signedOut, .signedIn(userID: "user_2mock"), .expired(lastUserID: "user_2mock"),
                .signedIn(userID: "user_2mock"), .signedOut,
            ])
    }

    @Test func signOutEndsTheSDKsSessionAndTokenKits() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let app = ClerkApp(
            strategy: sdk.strategy, backendURL: Self.backend, transport: MockTransport(), clock: clock,
            now: clock.wallClock, signOutSDK: { sdk.signOut() })
        sdk.signIn(.init(id: "user_2bye"))
        #expect(await app.checkSession() == .signedIn(userID: "user_2bye"))
        try await app.signOut()
        #expect(sdk.user == nil)
        #expect(app.auth.currentState == .signedOut)
        #expect(await app.checkSession() == .signedOut)
    }

    @Test func aRefusedDeletionKeepsTheSession() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let app = ClerkApp(
            strategy: sdk.strategy, backendURL: Self.backend,
            transport: MockTransport(script: [.response(status: .internalServerError)]), clock: clock,
            now: clock.wallClock, signOutSDK: { sdk.signOut() })
        sdk.signIn(.init(id: "user_2keep"))
        await app.checkSession()
        await #expect(throws: TokenRefreshError.serverRefused) { try await app.deleteAccount() }
        #expect(app.auth.currentState == .signedIn(userID: "user_2keep"))
        #expect(sdk.user != nil)
    }

    @Test func theClerkDemoRunHoldsEveryExpectation() async throws {
        let report = DemoReport(title: "clerk-demo under test")
        try await ClerkDemoRun(report: report, email: "demo@example.com", password: "password123", timeout: 10).run()
        #expect(!report.failed)
    }
}
