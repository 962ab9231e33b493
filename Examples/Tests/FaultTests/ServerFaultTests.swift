import DemoAuthServer
import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// A fault on the refresh path that ends the refresh without rotating anything.
struct RefreshFault: Sendable, CustomTestStringConvertible {
    let testDescription: String
    /// Injected by the server (`nil`: none).
    var serverFaults: DemoAuthServer.Faults?
    /// Injected by the transport in front of the server (`nil`: none).
    var transportMode: FaultyTransport.Mode?
    /// The error every caller gets.
    let error: TokenRefreshError
    /// The HTTP status the error carries, if any.
    let status: Int?
    /// Whether the request reached the server.
    let reachesServer: Bool

    static let all: [RefreshFault] = [
        RefreshFault(
            testDescription: "500 server_error", serverFaults: .init(failNextRefreshes: 1), error: .transient,
            status: 500, reachesServer: true),
        RefreshFault(
            testDescription: "502 HTML error page from a proxy",
            transportMode: .answer(
                status: 502, contentType: "text/html; charset=utf-8",
                body: "<html><body><h1>502 Bad Gateway</h1></body></html>"),
            error: .transient, status: 502, reachesServer: false),
        RefreshFault(
            testDescription: "200 HTML page (captive portal)", serverFaults: .init(htmlNextRefreshes: 1),
            error: .malformedResponse, status: 200, reachesServer: true),
        RefreshFault(
            testDescription: "200 malformed JSON", serverFaults: .init(malformedJSONNextRefreshes: 1),
            error: .malformedResponse, status: 200, reachesServer: true),
    ]
}

@Suite("TokenKit against the demo server under faults", .logLeakCheck())
struct ServerFaultTests {
    /// Rule 5: a failure that is not `invalid_grant` never ends the session. Every concurrent caller shares the
    /// one failed attempt; the stored pair is untouched; the next call refreshes with it.
    @Test(arguments: RefreshFault.all)
    func aFailedRefreshKeepsTheSessionAndTheNextOneSucceeds(_ fault: RefreshFault) async throws {
        try await Harness.run { harness in
            let before = try #require(await harness.stored())
            if let faults = fault.serverFaults { harness.server.setFaults(faults) }
            if let mode = fault.transportMode { harness.transport.set(mode) }
            harness.expire()

            let results = await harness.validTokens(10)
            #expect(results.allSatisfy { $0.failure == fault.error })
            let error = try #require(results.first?.failure)
            #expect(error.status == fault.status)
            #expect(harness.server.stats.refreshAttempts == (fault.reachesServer ? 1 : 0))
            #expect(harness.server.stats.refreshes == 0)
            let failed = await harness.events.waitFor(.refreshFailed)
            #expect(failed.count == 1)
            #expect(failed.first?.error == fault.error)
            #expect(harness.events.all(.signedOut).isEmpty)
            #expect(harness.client.currentState.hasSession)
            #expect(await harness.storedSessionIsStill(before))
            // A transient failure that a server answered is recorded with the session: every process sharing it
            // counts it in the failure budget.
            #expect(await harness.stored()?.recentServerFailures?.count == (fault.error == .transient ? 1 : nil))

            harness.transport.set(.forward)
            let token = try await harness.client.validToken()
            #expect(try await harness.fetch() == 200)
            #expect(harness.server.stats.refreshes == 1)
            #expect(harness.server.stats.rejectedRefreshes == 0)
            #expect(harness.client.currentState == .signedIn(userID: Demo.userID))
            let stored = try #require(await harness.stored())
            #expect(stored.token.accessToken == token.accessToken)
            #expect(stored.token.refreshToken != before.token.refreshToken)
            #expect(stored.generation > before.generation)
        }
    }

    /// Offline: the server is down. The session is kept (state `expired`, offline), then refreshes as soon as
    /// the server is back on the same port.
    @Test func aRefusedConnectionKeepsTheSessionOffline() async throws {
        try await Harness.run { harness in
            let before = try #require(await harness.stored())
            await harness.server.stop()
            harness.expire()

            let error = await #expect(throws: TokenRefreshError.self) { try await harness.client.validToken() }
            #expect(error == .transient)
            #expect(error?.isConnectivityFailure == true)
            #expect(harness.client.isOfflineNow)
            #expect(harness.client.currentState == .expired(lastUserID: Demo.userID))
            await harness.events.waitFor(.refreshFailed)
            #expect(harness.events.all(.signedOut).isEmpty)
            #expect(await harness.stored() == before)

            try await harness.server.start(onPort: harness.baseURL.port)
            #expect(try await harness.fetch() == 200)
            #expect(!harness.client.isOfflineNow)
            #expect(harness.client.currentState == .signedIn(userID: Demo.userID))
            #expect(harness.server.stats.refreshes == 1)
            await harness.events.waitFor(.tokenRefreshed)
        }
    }

    /// A refresh that never answers ends at the client's refresh timeout (on the injected clock) as a transient,
    /// connectivity failure; the session is kept.
    @Test func aRefreshThatNeverAnswersTimesOutAndKeepsTheSession() async throws {
        try await Harness.run { harness in
            let before = try #require(await harness.stored())
            harness.transport.set(.hang)
            harness.expire()

            let call = Task { try await harness.client.validToken() }
            await harness.clock.waitForSleepers(count: 1)  // the refresh timeout's timer
            harness.clock.advance(by: .seconds(9))
            #expect(harness.clock.sleeperCount == 1)  // not yet
            harness.clock.advance(by: .seconds(1))
            let error = await #expect(throws: TokenRefreshError.self) { try await call.value }
            #expect(error == .timeout)
            #expect(harness.client.isOfflineNow)
            #expect(harness.client.currentState == .expired(lastUserID: Demo.userID))
            let failed = await harness.events.waitFor(.refreshFailed)
            #expect(failed.first?.error == .timeout)
            #expect(harness.server.stats.refreshAttempts == 0)
            #expect(await harness.stored() == before)

            harness.transport.set(.forward)
            #expect(try await harness.fetch() == 200)
            #expect(harness.server.stats.refreshes == 1)
            #expect(!harness.client.isOfflineNow)
        }
    }

    /// `503` with a `Retry-After` longer than the client waits inside a refresh: the refresh fails at once, the
    /// session is kept, and no new refresh reaches the server before the `Retry-After` has passed.
    @Test func aRetryAfterLongerThanTheClientWaitsHoldsBackEveryRefreshUntilItPasses() async throws {
        // Retries are allowed, but not a 30-second wait inside one refresh (the default limit is 5 s).
        try await Harness.run(configuration: Harness.clientConfiguration(retries: 2)) { harness in
            let before = try #require(await harness.stored())
            harness.server.setFaults(.init(unavailableNextRefreshes: 1, retryAfterSeconds: 30))
            harness.expire()

            let error = await #expect(throws: TokenRefreshError.self) { try await harness.client.validToken() }
            #expect(error == .transient)
            #expect(error?.status == 503)
            #expect(error?.retryAfter == .seconds(30))
            #expect(harness.server.stats.refreshAttempts == 1)
            await harness.events.waitFor(.refreshFailed)

            harness.clock.advance(by: .seconds(29))
            let held = await harness.validTokens(5)
            #expect(held.allSatisfy { $0.failure == .transient && $0.failure?.retryAfter == .seconds(1) })
            await #expect(throws: TokenRefreshError.self) { try await harness.fetch() }
            let rejected = try #require(harness.client.currentToken).accessToken
            let afterRejection = await #expect(throws: TokenRefreshError.self) {
                try await harness.client.refreshToken(afterRejectionOf: rejected)
            }
            #expect(afterRejection == .transient)
            #expect(harness.server.stats.refreshAttempts == 1)  // none before Retry-After, not even after a 401
            #expect(harness.client.currentState.hasSession)
            #expect(await harness.storedSessionIsStill(before))

            harness.clock.advance(by: .seconds(1))
            #expect(try await harness.fetch() == 200)
            #expect(harness.server.stats.refreshAttempts == 2)
            #expect(harness.server.stats.refreshes == 1)
        }
    }

    /// `503` with a short `Retry-After`: the refresh waits exactly that long (on the injected clock) and retries.
    @Test func aShortRetryAfterIsWaitedForInsideTheRefresh() async throws {
        try await Harness.run(configuration: Harness.clientConfiguration(refreshTimeout: nil, retries: 1)) { harness in
            harness.server.setFaults(.init(unavailableNextRefreshes: 1, retryAfterSeconds: 3))
            harness.expire()

            let call = Task { try await harness.client.validToken() }
            await harness.clock.waitForSleepers(count: 1)  // the Retry-After wait
            #expect(harness.server.stats.refreshAttempts == 1)
            harness.clock.advance(by: .milliseconds(2_999))
            #expect(harness.clock.sleeperCount == 1)
            #expect(harness.server.stats.refreshAttempts == 1)
            harness.clock.advance(by: .milliseconds(1))
            let token = try await call.value
            #expect(harness.server.stats.refreshAttempts == 2)
            #expect(harness.server.stats.refreshes == 1)
            #expect(await harness.stored()?.token.accessToken == token.accessToken)
            #expect(harness.events.all(.refreshFailed).isEmpty)
        }
    }
}
