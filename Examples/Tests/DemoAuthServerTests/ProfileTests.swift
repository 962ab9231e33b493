import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck

/// The server profiles the fault scorecard runs against, and the gates that hold a refresh at an exact instant.
@Suite("Server profiles and refresh gates", .logLeakCheck())
struct ProfileTests {
    private static func configuration(_ profile: DemoAuthServer.Profile) -> DemoAuthServer.Configuration {
        profile.configuration(accessTokenLifetime: .seconds(60), window: .seconds(10))
    }

    @Test func theOverlapIssuesANewPairToThePreviousTokenAndRevokesOnAnOlderOne() async throws {
        let clock = TestWallClock()
        try await withServer(Self.configuration(.overlap), clock: clock) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let first = try Pair(try await client.jsonRefresh(login.refreshToken))

            clock.advance(seconds: 5)
            let again = try Pair(try await client.jsonRefresh(login.refreshToken))
            #expect(again.refreshToken != first.refreshToken && again.refreshToken != login.refreshToken)
            #expect(server.stats.graceReuses == 1)
            #expect(server.stats.reuseDetections == 0)

            // A newer token rotates: the login's token is now the second-to-last, and presenting it is reuse.
            _ = try Pair(try await client.jsonRefresh(again.refreshToken))
            let reused = try await client.jsonRefresh(login.refreshToken)
            #expect(reused.status == 401)
            #expect(server.stats.reuseDetections == 1)
            #expect(try await client.jsonRefresh(first.refreshToken).status == 401)
        }
    }

    @Test func aOneTimeUseTokenIsRefusedOnceUsedAndTheFamilyLivesOn() async throws {
        try await withServer(Self.configuration(.oneTimeUse)) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let first = try Pair(try await client.jsonRefresh(login.refreshToken))
            let reused = try await client.jsonRefresh(login.refreshToken)
            #expect(reused.status == 401)
            #expect(reused.errorCode == "invalid_grant")
            #expect(try await client.jsonRefresh(first.refreshToken).status == 200)
            #expect(server.stats.reuseDetections == 1)
        }
    }

    @Test func aNonRotatingServerKeepsTheRefreshTokenValid() async throws {
        try await withServer(Self.configuration(.nonRotating)) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let first = try await client.jsonRefresh(login.refreshToken)
            #expect(first.status == 200)
            #expect(try first.json()["refreshToken"] == nil)
            #expect(try await client.jsonRefresh(login.refreshToken).status == 200)
            #expect(server.stats.refreshes == 2)
            #expect(server.stats.reuseDetections == 0)
        }
    }

    @Test func aGateAfterTheRotationHoldsTheAnswerOfARefreshThatRotated() async throws {
        try await withServer(Self.configuration(.reuseDetection)) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let gate = server.holdNextRefresh(at: .afterRotation)
            let refresh = Task {
                try await client.send(
                    "POST", "/api/v1/auth/refresh",
                    headers: [
                        "Content-Type": "application/json", "X-API-Key": TestClient.apiKey, "X-Client-Tag": "worker-7",
                    ],
                    body: try JSONSerialization.data(withJSONObject: ["refreshToken": login.refreshToken ?? ""]))
            }
            try await waitUntil { gate.isHeld }
            #expect(gate.holder == "worker-7")
            #expect(server.stats.refreshes == 1)  // rotated while the answer is held
            gate.release()
            #expect(try await refresh.value.status == 200)
        }
    }

    @Test func anAbandonedRequestBeforeTheRotationRotatesNothing() async throws {
        try await withServer(Self.configuration(.reuseDetection)) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let gate = server.holdNextRefresh(at: .beforeRotation)
            let refresh = Task { try await client.jsonRefresh(login.refreshToken) }
            try await waitUntil { gate.isHeld }
            gate.abandon()
            #expect(try await refresh.value.status == 503)
            #expect(server.stats.refreshes == 0)
            #expect(try await client.jsonRefresh(login.refreshToken).status == 200)
        }
    }

    /// A bounded poll for what the server's threads do (at most 60 s, a guard against a hang on a loaded machine), never a wait for time to pass.
    private func waitUntil(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "not seen within 60 s", sourceLocation: sourceLocation)
            await Task.yield()
        }
    }
}
