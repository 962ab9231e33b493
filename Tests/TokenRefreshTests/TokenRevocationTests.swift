import AuthToken
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

/// RFC 7009 revocation through the public API, outside a sign-out.
@Suite(.logLeakCheck()) struct TokenRevocationTests {
    @Test func anAppRevokesARefreshTokenItselfAndTheServerForgetsIt() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
        let token = await server.issueSession(userID: "user-1", receivedAt: clock.date)
        let refreshToken = try #require(token.refreshToken)
        #expect(await server.isActive(refreshToken: refreshToken))
        let revocation = TokenRevocation.rfc7009(url: revokeURL, using: endpoint)
        try await revocation.revoke(refreshToken)
        #expect(await !server.isActive(refreshToken: refreshToken))
        // RFC 7009 section 2.2: revoking a token the server no longer knows also succeeds.
        try await revocation.revoke(refreshToken)
    }

    @Test func aRefusedRevocationThrowsWithTheStatus() async throws {
        let revocation = TokenRevocation.rfc7009(
            url: revokeURL,
            using: TokenEndpoint(
                url: tokenURL, client: OAuthClient(id: "app"), transport: fixedResponse(status: 503, body: "{}")))
        let error = await #expect(throws: TokenRefreshError.self) {
            try await revocation.revoke("refresh-token-7009-a")
        }
        #expect(error?.status == 503)
    }
}
