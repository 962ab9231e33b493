import AuthToken
import Foundation
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenRefresh

extension Interop {
    /// A refresh token revoked on the server (RFC 7009) ends the session: one failed refresh, a signed-out
    /// event with the revoked reason, an empty store, and the dead token never sent again.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
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
            let forced = await thrownError {
                try await session.client.refreshToken(afterRejectionOf: token.accessToken)
            }
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

        /// `configuration` with a sign-out that waits for its revocation (by default it waits 50 ms and leaves the
        /// rest to the background): the server's count is final when `signOut()` returns, however slowly it answers.
        static func waitingForTheRevocation(
            _ configuration: TokenRefreshClient.Configuration
        ) -> TokenRefreshClient.Configuration {
            var configuration = configuration
            configuration.pendingSignOuts.signOutWait = .seconds(30)
            return configuration
        }

        /// Sign-out with an RFC 7009 revocation configured: TokenKit revokes the refresh token with the session's
        /// own client authentication, and DOT then refuses both the refresh token and its access token.
        @Test(arguments: Login.clients.map(\.name))
        func signOutRevokesTheRefreshTokenAtTheServer(clientName: String) async throws {
            let oauthClient = try #require(Login.clients.first { $0.name == clientName }?.client)
            let server = try await InteropServer.prepared()
            let endpoint = server.endpoint(oauthClient)
            let configuration = Self.waitingForTheRevocation(
                TokenRefreshClient.Configuration(revocation: .rfc7009(url: server.revokeURL, using: endpoint)))
            let session = InteropSession(server, oauthClient: oauthClient, configuration: configuration)
            let events = session.client.events()
            let token = try await session.signIn()
            #expect(try await session.me().status == 200)

            try await session.client.signOut()

            let (signedOut, _) = await firstEvent(in: events) { $0.kind == .signedOut }
            #expect(signedOut?.reason == .userAction)
            #expect(try await server.stats().revocations == 1)
            let accessStatus = try await server.rawMe(token.accessToken)
            #expect(accessStatus == 401, "the access token died with it")
            let oldRefreshToken = try #require(token.refreshToken)
            let refresh = try await server.rawRefresh(oldRefreshToken, as: oauthClient)
            #expect(refresh.status == 400)
            #expect(refresh.error == "invalid_grant", "DOT revoked the refresh token")
        }

        /// A refresh that DOT refuses with `invalid_client` (the app's client secret is wrong, say after a
        /// rotation on the server) is a configuration error: TokenKit keeps the session and the store, publishes
        /// `refreshFailed`, and does not sign out.
        @Test func rejectedClientAuthenticationKeepsTheSession() async throws {
            let server = try await InteropServer.prepared()
            let store = InMemoryTokenStore()
            let goodEndpoint = server.endpoint(Credentials.confidentialBasic)
            let session = InteropSession(
                server, oauthClient: OAuthClient(id: Credentials.confidentialID, secret: "rotated-away-secret"),
                store: store)
            let events = session.client.events()
            let token = try await session.client.signIn(
                .password(username: Credentials.username, password: Credentials.password, at: goodEndpoint),
                userID: Credentials.username)

            try await server.expireAccessTokens()
            let error = try #require(await thrownError { try await session.me() } as? TokenRefreshError)
            #expect(error == .configuration)
            #expect(error.oauthError == "invalid_client")
            #expect(!error.isTerminal)

            let (failed, before) = await firstEvent(in: events) { $0.kind == .refreshFailed }
            #expect(failed?.error == .configuration)
            #expect(before.map(\.kind) == [.signedIn], "no sign-out")
            #expect(session.client.currentState == .signedIn(userID: Credentials.username))
            #expect(await storedSession(store)?.token == token, "the store still holds the session")
            let stats = try await server.stats()
            #expect(stats.tokenFailures["refresh_token:invalid_client"] == 1)
            #expect(stats.refreshInvalidGrants == 0)
        }

        /// Two clients share a `FileTokenStore` (two processes of one app). One signs out, which clears the store
        /// and revokes the refresh token at DOT. The other's next request gets a 401; before refreshing it
        /// re-reads the store (rule 3), finds the session gone, and ends its own session as removed elsewhere,
        /// without presenting the revoked refresh token to DOT.
        @Test func signOutInOneClientEndsTheOtherWithoutSendingTheRevokedToken() async throws {
            let server = try await InteropServer.prepared()
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let store = FileTokenStore(directory: directory.storeDirectory)
            let endpoint = server.endpoint(Credentials.confidentialBasic)
            let configuration = Self.waitingForTheRevocation(
                TokenRefreshClient.Configuration(revocation: .rfc7009(url: server.revokeURL, using: endpoint)))
            let leaving = InteropSession(server, store: store, configuration: configuration)
            try await leaving.signIn()
            let staying = InteropSession(server, store: store, configuration: configuration)
            #expect(await staying.client.restoreSession() == .signedIn(userID: Credentials.username))
            let events = staying.client.events()
            #expect(try await staying.me().status == 200)

            try await leaving.client.signOut()
            let error = await thrownError { try await staying.me() }
            #expect(error as? TokenRefreshError == .signedOut)

            let (signedOut, _) = await firstEvent(in: events) { $0.kind == .signedOut }
            #expect(signedOut?.reason == .removedElsewhere)
            #expect(staying.client.currentState == .signedOut)
            let stats = try await server.stats()
            #expect(stats.revocations == 1)
            #expect(stats.refreshGrants == 0)
            #expect(stats.failedTokenRequests == 0, "the revoked refresh token was not presented")
            #expect(staying.recorder.grantCount("refresh_token") == 0)
        }
    }
}
