import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenRefresh

extension Interop {
    /// DOT rotates the refresh token on every refresh; the rotated one must reach the store, or the next
    /// process to start would present a dead token.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct RotationPersistence {
        @Test func rotatedRefreshTokenIsPersistedAndUsedByTheNextClient() async throws {
            let server = try await InteropServer.prepared()
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let store = FileTokenStore(directory: directory.storeDirectory)

            let first = InteropSession(server, store: store)
            let signedIn = try await first.signIn()
            // Tokens are compared as `AuthToken` values (their descriptions are redacted) or outside `#expect`,
            // whose failure message would print string operands.
            let storedAfterSignIn = await storedSession(store)?.token
            #expect(storedAfterSignIn == signedIn)

            try await server.expireAccessTokens()
            #expect(try await first.me().status == 200)
            let rotated = try #require(first.client.currentToken)
            let refreshRotated = rotated.refreshToken != signedIn.refreshToken
            #expect(refreshRotated, "DOT rotated the refresh token")
            let stored = try #require(await storedSession(store))
            #expect(stored.token == rotated, "the rotated pair was written")
            #expect(stored.userID == Credentials.username)

            // A new client on the same store (an app restart) restores the session ...
            let second = InteropSession(server, store: store)
            #expect(await second.client.restoreSession() == .signedIn(userID: Credentials.username))
            #expect(second.client.currentToken == rotated)
            #expect(try await second.me().status == 200, "the restored access token is live")

            // ... and its refresh, with the stored refresh token, is accepted by DOT.
            try await server.expireAccessTokens()
            #expect(try await second.me().status == 200)
            let stats = try await server.stats()
            #expect(stats.refreshGrants == 2)
            #expect(stats.failedTokenRequests == 0, "the stored refresh token was the live one")
            #expect(stats.reuseDetections == 0)
            let latest = try #require(second.client.currentToken)
            let rotatedAgain = latest.refreshToken != rotated.refreshToken
            #expect(rotatedAgain, "DOT rotated the refresh token again")
            let storedLatest = await storedSession(store)?.token
            #expect(storedLatest == latest)

            // The pre-rotation refresh token is dead on the server (checked after the fact: with reuse
            // protection on, this revokes the family, so it comes last).
            let firstRefreshToken = try #require(signedIn.refreshToken)
            let replay = try await server.rawRefresh(firstRefreshToken)
            #expect(replay.status == 400)
            #expect(replay.error == "invalid_grant")
        }
    }
}
