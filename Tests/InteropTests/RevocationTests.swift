import Foundation
import NetworkRetry
import Persistence
import Testing
import TokenRefresh

extension Interop {
    /// A refresh token revoked on the server (RFC 7009) ends the session: one failed refresh, a signed-out
    /// event with the revoked reason, an empty store, and the dead token never sent again.
    @Suite(.enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct Revocation {
        @Test func revokedRefreshTokenEndsTheSessionOnce() async throws {
            let server = try await InteropServer.prepared()
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let store = FileTokenStore(directory: directory.storeDirectory)
            let session = InteropSession(server, store: store)
            let events = session.client.events()
            let token = try await session.signIn()
            let refreshToken = try #require(token.refreshToken)
            #expect(try await session.me().status == 200)

            // DOT: revoking the refresh token deletes its access token too, so the next request is a 401.
            try await server.revokeRefreshToken(refreshToken)
            let error = await thrownError { try await session.me() }
            let refreshError = try #require(error as? TokenRefreshError)
            #expect(refreshError == .refreshTokenRejected)
            #expect(refreshError.isTerminal)
            #expect(refreshError.oauthError == "invalid_grant")

            let (signedOut, before) = await firstEvent(in: events) { $0.kind == .signedOut }
            #expect(signedOut?.reason == .revoked)
            #expect(signedOut?.userID == Credentials.username)
            #expect(signedOut?.error == .refreshTokenRejected)
            #expect(before.map(\.kind) == [.signedIn], "no other event before the sign-out")
            #expect(session.client.currentState == .signedOut)
            #expect(session.client.currentToken == nil)
            #expect(await isAbsent(store.load(account: "default")), "the store is empty")

            // Again, by every door: nothing is sent to the token endpoint.
            let second = await thrownError { try await session.me() }
            #expect(second as? TokenRefreshError == .signedOut)
            let forced = await thrownError { try await session.client.refreshToken(afterRejectionOf: token.accessToken) }
            #expect(forced as? TokenRefreshError == .signedOut)
            let seeded = await thrownError { try await session.client.refreshToken(refreshToken) }
            #expect(seeded as? TokenRefreshError == .refreshTokenRejected, "the dead refresh token is remembered")

            let stats = try await server.stats()
            #expect(stats.revocations == 1)
            #expect(stats.refreshInvalidGrants == 1, "one failed refresh, not more")
            #expect(stats.refreshGrants == 0)
            #expect(session.recorder.grantCount("refresh_token") == 1)

            // A new client on the same store finds no session.
            let restarted = InteropSession(server, store: store)
            #expect(await restarted.client.restoreSession() == .signedOut)
        }
    }
}
