import ClerkDemoSupport
import DemoAppSupport
import DemoAuthServer
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Logging
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// The SDK stand-in against the demo server's frontend API over HTTP, on a manual clock.
@Suite(.logLeakCheck()) struct SimulatedClerkTests {
    func withClerk(_ body: (SimulatedClerk, DemoAuthServer, ManualClock) async throws -> Void) async throws {
        let clock = ManualClock()
        let server = DemoAuthServer(now: clock.wallClock, logger: Logger(label: "simulated-clerk-tests"))
        let url = try await server.start()
        let clerk = SimulatedClerk(
            frontendAPI: url, transport: DemoTransport.urlSession(timeout: 10), now: clock.wallClock)
        do {
            try await body(clerk, server, clock)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func token(_ clerk: SimulatedClerk, skipCache: Bool = false) async throws -> String? {
        let token = try await clerk.getToken(skipCache: skipCache)
        if let token { TestSecrets.shared.register(token, as: .accessToken) }
        return token
    }

    @Test func aWrongPasswordIsRefusedWithClerksCode() async throws {
        try await withClerk { clerk, _, _ in
            await #expect {
                try await clerk.signIn(identifier: "demo@example.com", password: "not-the-password")
            } throws: { error in
                (error as? SimulatedClerk.SignInFailed)?.code == "form_password_incorrect"
            }
            let none = try await token(clerk)
            #expect(none == nil)
        }
    }

    @Test func theCacheServesUntilTenSecondsBeforeExpiryOrUntilSkipped() async throws {
        try await withClerk { clerk, server, clock in
            try await clerk.signIn(identifier: "demo@example.com", password: "password123")
            let first = try await token(clerk)
            #expect(try await token(clerk) == first)
            #expect(try await token(clerk, skipCache: true) != first)
            clock.advance(by: .seconds(51))
            #expect(try await token(clerk) != first)
            #expect(clerk.mintedTokens == 3)
            #expect(server.sessionIssuer.stats.tokensIssued == 3)
        }
    }

    @Test func aRevokedSessionIsDroppedAndReportedAsRejected() async throws {
        try await withClerk { clerk, server, clock in
            try await clerk.signIn(identifier: "demo@example.com", password: "password123")
            _ = try await token(clerk)
            #expect(server.sessionIssuer.revokeSessions() == 1)
            clock.advance(by: .seconds(61))
            await #expect(throws: TokenRefreshError.refreshTokenRejected) { try await token(clerk) }
            #expect(clerk.sessionID == nil)
            #expect(try await token(clerk) == nil)
        }
    }

    @Test func theJWKSIsCacheableAndSignOutEndsTheSessionOnTheServer() async throws {
        try await withClerk { clerk, server, _ in
            let url = try #require(server.baseURL)
            let transport = DemoTransport.urlSession(timeout: 10)
            let (response, body) = try await transport.send(
                HTTPRequest(method: .get, url: url.appendingPathComponent("v1/jwks")), body: nil)
            #expect(response.headerFields[.cacheControl] == "public, max-age=300")
            let keys = try #require(try JSONSerialization.jsonObject(with: body) as? [String: [[String: String]]])
            #expect(
                keys["keys"]?.map { $0["kid"] } == [server.sessionIssuer.currentKeyID, server.sessionIssuer.nextKeyID])
            #expect(keys["keys"]?.allSatisfy { $0["alg"] == "RS256" && $0["kty"] == "RSA" } == true)
            try await clerk.signIn(identifier: "demo@example.com", password: "password123")
            _ = try await token(clerk)
            try await clerk.signOut()
            #expect(clerk.sessionID == nil)
            #expect(server.sessionIssuer.revokeSessions() == 0)
        }
    }
}
