import AuthToken
import Foundation
import Testing
import TokenKitLogCheck
import TokenRefresh

extension Interop {
    /// Sign-in by the password grant with each kind of client DOT offers, then an authenticated request and a
    /// refresh with the same client authentication.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct Login {
        /// The clients: confidential with HTTP Basic, confidential with the secret in the body, public.
        static let clients: [(name: String, client: OAuthClient)] = [
            ("confidential, Basic", Credentials.confidentialBasic),
            ("confidential, body", Credentials.confidentialBody),
            ("public", Credentials.publicClient),
        ]

        @Test(arguments: clients.map(\.name))
        func passwordGrantSignsInAndAuthenticatedRequestSucceeds(clientName: String) async throws {
            let oauthClient = try #require(Self.clients.first { $0.name == clientName }?.client)
            let server = try await InteropServer.prepared()
            let session = InteropSession(server, oauthClient: oauthClient)

            let token = try await session.signIn()
            #expect(token.refreshToken != nil, "DOT issues a refresh token with the password grant")
            #expect(token.lifetime == 3600)
            #expect(session.client.currentState == .signedIn(userID: Credentials.username))

            let me = try await session.me()
            #expect(me.status == 200)
            #expect(me.user == Credentials.username)
            #expect(me.clientID == oauthClient.id)

            var stats = try await server.stats()
            #expect(stats.passwordGrants == 1)
            #expect(stats.apiOK == 1)
            #expect(stats.apiUnauthorized == 0, "a fresh token is never rejected")

            // The same client authentication works for the refresh grant: cross an expiry on the server.
            try await server.expireAccessTokens()
            let again = try await session.me()
            #expect(again.status == 200)
            #expect(again.clientID == oauthClient.id)
            stats = try await server.stats()
            #expect(stats.refreshGrants == 1)
            #expect(stats.failedTokenRequests == 0)
            let refreshed = try #require(session.client.currentToken)
            // Secrets are compared outside `#expect`, whose failure message would print the operands.
            let newAccess = refreshed.accessToken != token.accessToken
            let newRefresh = refreshed.refreshToken != token.refreshToken
            #expect(newAccess, "a new access token")
            #expect(newRefresh, "DOT rotates the refresh token")
        }

        @Test func wrongPasswordIsARejectedSignInAndNoSession() async throws {
            let server = try await InteropServer.prepared()
            let session = InteropSession(server)
            let error = await thrownError { try await session.signIn(password: "not-alice-password") }
            #expect(error as? TokenRefreshError == .signInRejected)
            // DOT's real answer: 400 with invalid_grant; the code survives classification.
            #expect((error as? TokenRefreshError)?.oauthError == "invalid_grant")
            #expect((error as? TokenRefreshError)?.status == 400)
            #expect(session.client.currentState == .signedOut)
            #expect(session.client.currentToken == nil)
            #expect(await session.client.restoreSession() == .signedOut)
            let stats = try await server.stats()
            #expect(stats.tokenFailures["password:invalid_grant"] == 1)
        }

        @Test func wrongClientSecretIsAConfigurationError() async throws {
            let server = try await InteropServer.prepared()
            let session = InteropSession(
                server, oauthClient: OAuthClient(id: Credentials.confidentialID, secret: "not-the-secret"))
            let error = try #require(await thrownError { try await session.signIn() } as? TokenRefreshError)
            #expect(error == .configuration)
            #expect(error.oauthError == "invalid_client")
            #expect(error.status == 401)
        }

        /// RFC 6749 section 2.3.1 and appendix B: the client ID and secret are form-encoded before they are
        /// joined for HTTP Basic, and every form value is escaped. DOT decodes both ways; a password and a
        /// secret full of reserved and non-ASCII characters sign in and refresh with either method.
        @Test(arguments: ["basic", "body"])
        func reservedCharactersInSecretAndPasswordSurviveEncoding(method: String) async throws {
            let server = try await InteropServer.prepared()
            let oauthClient = OAuthClient(
                id: Credentials.specialID, secret: Credentials.specialSecret,
                authentication: method == "basic" ? .basic : .body)
            let session = InteropSession(server, oauthClient: oauthClient)
            try await session.client.signIn(
                .password(
                    username: Credentials.specialUsername, password: Credentials.specialPassword,
                    at: session.endpoint),
                userID: Credentials.specialUsername)
            let me = try await session.me()
            #expect(me.status == 200)
            #expect(me.user == Credentials.specialUsername)
            #expect(me.clientID == Credentials.specialID)

            try await server.expireAccessTokens()
            #expect(try await session.me().status == 200)
            let stats = try await server.stats()
            #expect(stats.refreshGrants == 1)
            #expect(stats.failedTokenRequests == 0)
        }
    }
}
