import AuthToken
import Foundation
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

extension Interop {
    /// 100 concurrent requests across an access-token expiry: one refresh on the server, every request served.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct ConcurrentExpiry {
        static let requests = 100

        /// The server expired the token and the client does not know: every request carries the old token,
        /// DOT answers 401 `invalid_token`, and `refreshToken(afterRejectionOf:)` shares one refresh (callers
        /// that arrive after it get the new token as a stale rejection, without a network call).
        @Test func serverSideExpiryCostsOneRefreshForAHundredConcurrentRequests() async throws {
            let server = try await InteropServer.prepared()
            let session = InteropSession(server)
            let first = try await session.signIn()
            #expect(try await session.me().status == 200)

            try await server.expireAccessTokens()
            let results = await session.concurrentMe(Self.requests)

            let failures = results.filter { if case .failure = $0 { true } else { false } }
            #expect(failures.isEmpty, "failed requests: \(failures.count)")
            #expect(results.allSatisfy { (try? $0.get()) == 200 })
            let stats = try await server.stats()
            #expect(stats.refreshGrants == 1, "exactly one refresh across the expiry")
            #expect(stats.failedTokenRequests == 0)
            #expect(stats.apiOK == Self.requests + 1)
            #expect(stats.apiUnauthorized <= Self.requests, "each request was rejected at most once")
            #expect(session.recorder.grantCount("refresh_token") == 1, "and only one was sent")
            // Secrets are compared outside `#expect`, whose failure message would print the operands.
            let replaced = session.client.currentToken?.accessToken != first.accessToken
            #expect(replaced, "a new access token")
        }

        /// The client's wall clock passes the expiry (injected, no waiting), and the server expired the token
        /// too: `validToken()` refreshes ahead of the requests, once, and no request is ever rejected.
        @Test func clientSideExpiryRefreshesOnceBeforeAnyRequestIsSent() async throws {
            let server = try await InteropServer.prepared()
            let wallClock = ManualClock()
            let session = InteropSession(server, now: wallClock.wallClock)
            try await session.signIn()
            #expect(try await session.me().status == 200)

            try await server.expireAccessTokens()
            wallClock.advance(by: .seconds(3600))
            let results = await session.concurrentMe(Self.requests)

            #expect(results.allSatisfy { (try? $0.get()) == 200 })
            let stats = try await server.stats()
            #expect(stats.refreshGrants == 1)
            #expect(stats.apiOK == Self.requests + 1)
            #expect(stats.apiUnauthorized == 0, "the proactive refresh came before every request")
            #expect(stats.failedTokenRequests == 0)
        }
    }
}
