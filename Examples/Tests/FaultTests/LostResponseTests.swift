import DemoAuthServer
import Foundation
import Synchronization
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// The server rotated, then the answer was lost: the client still holds the refresh token the server retired.
struct LostResponse: Sendable, CustomTestStringConvertible {
    let testDescription: String
    /// The server's faults.
    var faults = DemoAuthServer.Faults()
    /// What the transport in front of the server does to the refresh.
    var transportMode = FaultyTransport.Mode.forward
    /// Whether the first refresh (whose answer is lost) fails for want of an answer (the refresh timeout or a
    /// connection error), rather than with a status.
    let connectivity: Bool
    /// Whether the request may hang until the refresh timeout (the server closed the connection unanswered).
    var mayHang = false

    static let all: [LostResponse] = [
        LostResponse(
            testDescription: "connection closed after rotation",
            faults: .init(dropResponseAfterRotationNextRefreshes: 1), connectivity: true,
            mayHang: true),
        LostResponse(
            testDescription: "connection reset mid-response", transportMode: .resetAfterSending, connectivity: true),
        LostResponse(
            testDescription: "500 after rotation", faults: .init(failAfterRotationNextRefreshes: 1),
            connectivity: false),
    ]
}

extension Harness {
    /// Expires the token and refreshes once while the answer gets lost. A connection the server closed after
    /// rotating can leave URLSession on Linux waiting for its own 60-second timeout (observed on a reused
    /// connection), so once the server has rotated, the test moves the injected clock past the client's refresh
    /// timeout: the refresh ends as a `timeout` then, or earlier with a connection error. `mayHang`: whether the
    /// fault can leave the request waiting like that (otherwise the refresh ends by itself).
    func refreshWithLostAnswer(
        mayHang: Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> TokenRefreshError? {
        expire()
        let finished = Mutex(false)
        let call = Task { [client] in
            defer { finished.withLock { $0 = true } }
            return try await client.validToken()
        }
        if mayHang {
            await poll(sourceLocation: sourceLocation) {
                server.stats.refreshes == 1 && (clock.sleeperCount == 1 || finished.withLock { $0 })
            }
            if let timeout = client.configuration.refreshTimeout { clock.advance(by: timeout) }
        }
        return await #expect(throws: TokenRefreshError.self, sourceLocation: sourceLocation) { try await call.value }
    }
}

@Suite("A token response lost after the server rotated", .logLeakCheck())
struct LostResponseTests {
    /// Reuse detection on, no grace window: presenting the retired token again revokes the family, so the
    /// session ends once, as revoked, and the store is cleared; the dead token is not sent a third time.
    @Test(arguments: LostResponse.all)
    func withoutAGraceWindowTheSessionEndsAsRevoked(_ lost: LostResponse) async throws {
        try await Harness.run(
            server: .init(accessTokenLifetime: .seconds(Harness.accessTokenLifetime), reuseDetection: true)
        ) { harness in
            harness.server.setFaults(lost.faults)
            harness.transport.set(lost.transportMode)

            let first = await harness.refreshWithLostAnswer(mayHang: lost.mayHang)
            #expect(first?.isTransient == true)
            #expect(first?.isConnectivityFailure == lost.connectivity)
            harness.transport.set(.forward)
            #expect(harness.server.stats.refreshes == 1)  // the server did rotate
            #expect(harness.client.currentState.hasSession)  // a transient failure: kept for now

            let second = await #expect(throws: TokenRefreshError.self) { try await harness.client.validToken() }
            #expect(second == .refreshTokenRejected)
            #expect(harness.server.stats.reuseDetections == 1)
            let signedOut = await harness.events.waitFor(.signedOut)
            #expect(signedOut.count == 1)
            #expect(signedOut.first?.reason == .revoked)
            #expect(harness.client.currentState == .signedOut)
            #expect(await harness.stored() == nil)

            let attempts = harness.server.stats.refreshAttempts
            await #expect(throws: TokenRefreshError.self) { try await harness.client.validToken() }
            #expect(harness.server.stats.refreshAttempts == attempts)
            #expect(harness.events.all(.signedOut).count == 1)
        }
    }

    /// Within the server's grace window the retired token returns the pair already issued: the client recovers
    /// with it, persists it, and the next refresh uses the new refresh token without any reuse detected.
    @Test(arguments: LostResponse.all)
    func withinAGraceWindowTheClientRecovers(_ lost: LostResponse) async throws {
        try await Harness.run(
            server: .init(
                accessTokenLifetime: .seconds(Harness.accessTokenLifetime), reuseDetection: true,
                graceWindow: .seconds(30))
        ) { harness in
            harness.server.setFaults(lost.faults)
            harness.transport.set(lost.transportMode)

            let first = await harness.refreshWithLostAnswer(mayHang: lost.mayHang)
            #expect(first?.isTransient == true)
            #expect(first?.isConnectivityFailure == lost.connectivity)
            harness.transport.set(.forward)

            harness.clock.advance(by: .seconds(5))  // well inside the grace window
            #expect(try await harness.fetch() == 200)
            #expect(harness.server.stats.graceReuses == 1)
            #expect(harness.server.stats.reuseDetections == 0)
            #expect(harness.client.currentState == .signedIn(userID: Demo.userID))
            #expect(harness.events.all(.signedOut).isEmpty)
            let recovered = try #require(await harness.stored())
            #expect(recovered.token.accessToken == harness.client.currentToken?.accessToken)

            harness.expire()
            #expect(try await harness.fetch() == 200)
            #expect(harness.server.stats.refreshes == 2)
            #expect(harness.server.stats.reuseDetections == 0)
            #expect(harness.server.stats.rejectedRefreshes == 0)
            #expect(try #require(await harness.stored()).token.refreshToken != recovered.token.refreshToken)
        }
    }
}
