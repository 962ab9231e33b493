import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

extension Interop {
    /// DOT's reuse-protection and grace-window settings, switched at run time with `/debug/config`, against
    /// TokenKit's rotation rules: a rotated pair is stored before it is used, and a refused refresh token ends the
    /// session.
    ///
    /// What DOT 3.4.1 does (Interop/README.md, "How DOT 3.4.1 behaves"): every refresh rotates the refresh
    /// token. Presenting the rotated-out token again is `invalid_grant`; with reuse protection on, that also
    /// revokes the whole token family (the live pair dies). Within a grace window of N seconds after the
    /// rotation, the rotated-out token instead gets `200` with the same pair it already produced.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct RotationModes {
        static let expiries = 3
        static let requestsPerClient = 50

        /// Reuse protection on, no grace window: the strictest server. Two clients share one `FileTokenStore`
        /// (two processes of one app, in one process here), each firing 50 concurrent requests across three
        /// expiries. TokenKit sends one refresh at a time per session across both clients (the store's
        /// exclusive access, then a re-read of the store: the second client adopts the pair the first one
        /// saved instead of presenting the rotated-out token). DOT sees one refresh per expiry and never a
        /// reused refresh token.
        ///
        /// Two ways across each expiry: the server expires the token and the clients learn it from 401s
        /// (`proactive: false`), or the clients' shared wall clock (injected) passes the expiry too, so they
        /// refresh before sending (`proactive: true`, and then no request is rejected).
        @Test(arguments: [false, true])
        func strictServerNeverSeesAReusedRefreshToken(proactive: Bool) async throws {
            let server = try await InteropServer.prepared()
            #expect(try await server.config() == .baseline)
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let store = FileTokenStore(directory: directory.storeDirectory)
            let wallClock = ManualClock()
            let first = InteropSession(server, store: store, now: wallClock.wallClock)
            try await first.signIn()
            let second = InteropSession(server, store: store, now: wallClock.wallClock)
            #expect(await second.client.restoreSession() == .signedIn(userID: Credentials.username))

            for expiry in 1...Self.expiries {
                try await server.expireAccessTokens()
                if proactive { wallClock.advance(by: .seconds(3600)) }
                async let one = first.concurrentMe(Self.requestsPerClient)
                async let two = second.concurrentMe(Self.requestsPerClient)
                let results = await one + two
                let served = results.filter { (try? $0.get()) == 200 }.count
                #expect(served == 2 * Self.requestsPerClient, "expiry \(expiry): \(served) requests served")
                let stats = try await server.stats()
                #expect(stats.refreshGrants == expiry, "one refresh per expiry")
                #expect(stats.reuseDetections == 0)
                #expect(stats.failedTokenRequests == 0)
            }
            let stats = try await server.stats()
            #expect(stats.apiOK == 2 * Self.requestsPerClient * Self.expiries)
            if proactive { #expect(stats.apiUnauthorized == 0, "every refresh came before the requests") }
            #expect(stats.refreshGrantsReplayed == 0)
            #expect(first.client.currentToken == second.client.currentToken, "both hold the live pair")
            #expect(await storedSession(store)?.token == first.client.currentToken)
        }

        /// One server setting and what a lost refresh answer should come to.
        struct LostResponseCase: Sendable, CustomTestStringConvertible {
            let name: String
            let reuseProtection: Bool
            let graceSeconds: Int
            /// Whether the client's retry reaches DOT only after the grace window has passed.
            let retryAfterWindow: Bool
            /// Whether the session survives.
            let recovered: Bool
            /// Whether DOT revokes the family (a reuse detection).
            let familyRevoked: Bool

            var testDescription: String { name }
        }

        static let lostResponseCases = [
            LostResponseCase(
                name: "reuse protection, no grace window", reuseProtection: true, graceSeconds: 0,
                retryAfterWindow: false, recovered: false, familyRevoked: true),
            LostResponseCase(
                name: "no reuse protection, no grace window", reuseProtection: false, graceSeconds: 0,
                retryAfterWindow: false, recovered: false, familyRevoked: false),
            LostResponseCase(
                name: "reuse protection, 30 s grace window", reuseProtection: true, graceSeconds: 30,
                retryAfterWindow: false, recovered: true, familyRevoked: false),
            LostResponseCase(
                name: "reuse protection, retry after the 30 s grace window", reuseProtection: true, graceSeconds: 30,
                retryAfterWindow: true, recovered: false, familyRevoked: true),
        ]

        /// A refresh whose answer is lost after DOT rotated (the connection drops once the server has
        /// processed the request; the test's transport swallows the answer and throws).
        ///
        /// TokenKit (rules 5 and 4): a dropped connection is transient, so the same refresh is retried with
        /// the same refresh token, the only one it has.
        /// - Inside DOT's grace window, DOT answers with the pair it already minted; TokenKit persists it and
        ///   the session goes on, the next refresh included. This is what the grace window is for.
        /// - Without a grace window (or after it), DOT answers `invalid_grant`. That is terminal for TokenKit:
        ///   the session ends with `signedOut(revoked)`, the store is cleared, and the token is not sent again.
        ///   With reuse protection DOT also revoked the family, so the pair TokenKit never saw is dead too;
        ///   without it, that pair lives on at the server, unreachable (it expires or is cleaned up there).
        @Test(arguments: lostResponseCases)
        func responseLostAfterRotation(_ mode: LostResponseCase) async throws {
            let config = ServerConfig(
                accessTokenExpireSeconds: 3600, refreshTokenReuseProtection: mode.reuseProtection,
                refreshTokenGracePeriodSeconds: mode.graceSeconds)
            let server = try await InteropServer.prepared(config: config)
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let store = FileTokenStore(directory: directory.storeDirectory)
            // Retries without a pause (zero backoff): the test never waits on a clock.
            let configuration = TokenRefreshClient.Configuration(backoff: .init(retries: 2, initialDelay: .zero))
            let session = InteropSession(server, store: store, configuration: configuration)
            let events = session.client.events()
            let signedIn = try await session.signIn()

            try await server.expireAccessTokens()
            if mode.retryAfterWindow {
                session.recorder.setLoss(.loseNextRefreshThen { try await server.ageRevocations(seconds: 31) })
            } else {
                session.recorder.setLoss(.loseNextRefresh)
            }
            let outcome = await thrownError { try await session.me() }
            let lostAccessToken = try #require(session.recorder.lostAccessToken, "DOT answered the lost refresh")
            #expect(session.recorder.grantCount("refresh_token") == 2, "the lost refresh and one retry")

            var stats = try await server.stats()
            #expect(stats.reuseDetections == (mode.familyRevoked ? 1 : 0))
            if mode.recovered {
                #expect(outcome == nil, "the request succeeded after the retry")
                #expect(stats.graceReplays == 1)
                #expect(stats.refreshGrants == 2)
                #expect(stats.refreshGrantsReplayed == 1, "DOT handed out the same pair again")
                let current = try #require(session.client.currentToken)
                // Secrets are compared outside `#expect`, whose failure message would print the operands.
                let holdsLostPair = current.accessToken == lostAccessToken
                let rotated = current.refreshToken != signedIn.refreshToken
                #expect(holdsLostPair, "the client holds the pair DOT minted")
                #expect(rotated, "and its rotated refresh token")
                #expect(await storedSession(store)?.token == current)

                // The session goes on: the next expiry refreshes with the replayed (live) refresh token.
                try await server.expireAccessTokens()
                #expect(try await session.me().status == 200)
                stats = try await server.stats()
                #expect(stats.refreshGrants == 3)
                #expect(stats.failedTokenRequests == 0)
                #expect(stats.reuseDetections == 0)
            } else {
                let error = try #require(outcome as? TokenRefreshError)
                #expect(error == .refreshTokenRejected)
                #expect(stats.refreshInvalidGrants == 1)
                #expect(stats.graceReplays == 0)
                let (signedOut, before) = await firstEvent(in: events) { $0.kind == .signedOut }
                #expect(signedOut?.reason == .revoked)
                #expect(before.map(\.kind) == [.signedIn])
                #expect(await isAbsent(store.load(account: "default")))
                // What became of the pair DOT minted and TokenKit never saw.
                let lostPairStatus = try await server.rawMe(lostAccessToken)
                #expect(lostPairStatus == (mode.familyRevoked ? 401 : 200))
                // Nothing more is sent for the dead session.
                #expect(await thrownError { try await session.me() } as? TokenRefreshError == .signedOut)
                #expect(session.recorder.grantCount("refresh_token") == 2)
            }
        }
    }
}
