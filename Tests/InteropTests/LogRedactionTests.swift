import AuthToken
import Foundation
import Logging
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

extension Interop {
    /// Nothing secret reaches a log: every TokenKit component that takes a `Logger` logs at `.trace` into a
    /// capture during a full interop flow, and no access token, refresh token, client secret, password or
    /// Authorization value that crossed the wire appears in it.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct LogRedaction {
        @Test func traceLogsOfAFullFlowContainNoSecret() async throws {
            let server = try await InteropServer.prepared(
                config: ServerConfig(
                    accessTokenExpireSeconds: 3600, refreshTokenReuseProtection: true,
                    refreshTokenGracePeriodSeconds: 30))
            let capture = LogCapture()
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let store = FileTokenStore(
                directory: directory.storeDirectory,
                logger: capture.logger("TokenKit.Persistence.FileTokenStore"))
            let recorder = RecordingTransport(server.transport)
            func makeSession(_ oauthClient: OAuthClient = Credentials.confidentialBasic) -> InteropSession {
                // Sign-out revokes with the session's own client (RFC 7009), through the recording transport.
                let revocation = TokenRevocation.rfc7009(
                    url: server.revokeURL, using: server.endpoint(oauthClient, transport: recorder))
                let configuration = TokenRefreshClient.Configuration(
                    backoff: .init(retries: 2, initialDelay: .zero), revocation: revocation)
                return InteropSession(
                    server, oauthClient: oauthClient, store: store, configuration: configuration, recorder: recorder,
                    logger: capture.logger("TokenKit"))
            }

            // A rejected password and a wrong client secret: secrets in failed requests count too.
            let wrongPassword = "wrong-password-for-the-log-test"
            let session = makeSession()
            _ = await thrownError { try await session.signIn(password: wrongPassword) }
            let wrongSecret = "wrong-secret-for-the-log-test"
            _ = await thrownError {
                try await makeSession(
                    OAuthClient(id: Credentials.confidentialID, secret: wrongSecret, authentication: .body)
                ).signIn()
            }

            // Sign in, request, refresh across an expiry with concurrent callers.
            try await session.signIn()
            #expect(try await session.me().status == 200)
            try await server.expireAccessTokens()
            #expect(await session.concurrentMe(20).allSatisfy { (try? $0.get()) == 200 })

            // A refresh answer lost after rotation, recovered by the grace window (transient failure logged).
            try await server.expireAccessTokens()
            recorder.setLoss(.loseNextRefresh)
            #expect(try await session.me().status == 200)

            // A restart restores the session from the file store; then the server revokes it.
            let restarted = makeSession()
            await restarted.client.restoreSession()
            #expect(try await restarted.me().status == 200)
            // Both clients across one expiry: one refreshes, the other adopts the stored pair.
            try await server.expireAccessTokens()
            async let fromFirst = session.me()
            async let fromRestarted = restarted.me()
            #expect(try await [fromFirst.status, fromRestarted.status] == [200, 200])
            let restartedRefreshToken = try #require(restarted.client.currentToken?.refreshToken)
            try await server.revokeRefreshToken(restartedRefreshToken)
            try await server.expireAccessTokens()
            #expect(await thrownError { try await restarted.me() } as? TokenRefreshError == .refreshTokenRejected)

            // Sign in with the public client and sign out, which revokes at the server.
            let publicSession = makeSession(Credentials.publicClient)
            try await publicSession.signIn()
            #expect(try await publicSession.me().status == 200)
            try await publicSession.client.signOut()
            // The sign-out waits 50 ms for the revocation, which goes on afterwards: wait for it to be sent.
            #expect(await publicSession.client.sendPendingSignOuts() == 0)

            let stats = try await server.stats()
            #expect(stats.refreshGrants == 4, "one, the lost one, its replay, and one for both clients")
            #expect(stats.revocations == 2)

            let secrets = TestSecrets()
            for secret in recorder.secrets { secrets.register(secret.value, as: secret.kind, origin: secret.origin) }
            for (secret, kind) in [
                (Credentials.password, TestSecrets.Kind.password), (wrongPassword, .password),
                (Credentials.confidentialSecret, .clientSecret), (wrongSecret, .clientSecret),
            ] {
                secrets.register(secret, as: kind)
            }
            let kinds = Set(secrets.all.map(\.kind))
            for kind in [TestSecrets.Kind.accessToken, .refreshToken, .password, .clientSecret, .credential] {
                #expect(kinds.contains(kind), "the flow produced no \(kind) to look for")
            }
            #expect(secrets.count >= 12, "secrets collected: \(secrets.count)")
            #expect(secrets.tooShort.isEmpty)

            let lines = capture.lines
            #expect(lines.count >= 50, "log lines captured: \(lines.count)")
            #expect(lines.contains { $0.hasPrefix("trace ") }, "trace lines are captured")
            #expect(lines.contains { $0.contains("token refreshed") })
            #expect(lines.contains { $0.contains("refresh attempt failed") })
            let search = LogLeakSearch(secrets: secrets.all)
            // The search itself finds a secret where there is one.
            let anyAccessToken = secrets.all.first { $0.kind == .accessToken }?.value ?? ""
            #expect(search.leaks(in: "x \(anyAccessToken) y").map(\.secret.kind) == [.accessToken])
            let leaks = search.leaks(in: lines)
            #expect(leaks.isEmpty, "secrets found in \(lines.count) log lines: \(leaks)")
        }
    }
}
