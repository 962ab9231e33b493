import DemoAuthServer
import Foundation
import Logging
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// The demo server's Clerk-like issuer: claims, JWKS, rotation, and sessions that end.
@Suite(.logLeakCheck()) struct SessionIssuerTests {
    static let logger = Logger(label: "clerk-demo-tests")

    func issuer(_ clock: ManualClock) -> SessionIssuer {
        SessionIssuer(now: clock.wallClock, logger: Self.logger)
    }

    func mint(_ issuer: SessionIssuer, _ session: SessionIssuer.StartedSession) throws -> String {
        let token = try issuer.sessionToken(sessionID: session.sessionID, clientToken: session.clientToken)
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    func start(_ issuer: SessionIssuer) -> SessionIssuer.StartedSession {
        let session = issuer.startSession(userID: "user_2issuer", email: "issuer@example.com")
        TestSecrets.shared.register(session.clientToken, as: .refreshToken)
        return session
    }

    func verifier(_ issuer: SessionIssuer, _ clock: ManualClock) throws -> TokenVerifier {
        TokenVerifier(
            configuration: .init(
                issuer: issuer.configuration.issuer, allowedParties: [issuer.configuration.authorizedParty]),
            keySource: StaticJWKSSource(try JWKSet(json: issuer.jwksDocument)), now: clock.wallClock)
    }

    @Test func sessionTokensCarryClerksClaimsAndVerifyThroughTheJWKS() async throws {
        let clock = ManualClock()
        let issuer = issuer(clock)
        let session = start(issuer)
        let claims = try await verifier(issuer, clock).verify(try mint(issuer, session))
        #expect(claims.algorithm == .rs256)
        #expect(claims.keyID == issuer.currentKeyID)
        #expect(claims.subject == "user_2issuer")
        #expect(claims.sessionID == session.sessionID)
        #expect(claims.authorizedParty == issuer.configuration.authorizedParty)
        let issuedAt = try #require(claims.issuedAt)
        #expect(claims.expiration == issuedAt.addingTimeInterval(60))
        #expect(claims.notBefore == issuedAt.addingTimeInterval(-10))
    }

    @Test func theNextKeyIsPublishedBeforeItSignsAndTheOldOneStaysUntilItsTokensExpire() async throws {
        let clock = ManualClock()
        let issuer = issuer(clock)
        let session = start(issuer)
        let first = issuer.currentKeyID
        let next = issuer.nextKeyID
        #expect(issuer.publishedKeyIDs == [first, next])
        let oldToken = try mint(issuer, session)
        clock.advance(by: .seconds(30))
        #expect(try issuer.rotateKey() == next)
        // A verifier that fetched the JWKS before the rotation already knows the key that signs now.
        let before = try verifier(issuer, clock)
        #expect(issuer.publishedKeyIDs.contains(first))
        let newToken = try mint(issuer, session)
        #expect(try await before.verify(newToken).keyID == next)
        #expect(try await before.verify(oldToken).keyID == first)
        // The old key leaves once its last token has expired.
        clock.advance(by: .seconds(62))
        #expect(!issuer.publishedKeyIDs.contains(first))
        #expect(issuer.publishedKeyIDs.count == 2)
        #expect(issuer.stats.rotations == 1)
    }

    @Test func aWithdrawnKeyLeavesTheJWKSAtOnce() throws {
        let clock = ManualClock()
        let issuer = issuer(clock)
        let first = issuer.currentKeyID
        #expect(try issuer.withdrawCurrentKey() == first)
        #expect(!issuer.publishedKeyIDs.contains(first))
    }

    @Test(arguments: [SessionIssuer.Refusal.revoked, .signedOut, .userDeleted])
    func anEndedSessionMintsNoMoreTokens(_ reason: SessionIssuer.Refusal) throws {
        let clock = ManualClock()
        let issuer = issuer(clock)
        let session = start(issuer)
        _ = try mint(issuer, session)
        switch reason {
        case .revoked: #expect(issuer.revokeSessions(userID: "user_2issuer") == 1)
        case .signedOut: try issuer.endSession(session.sessionID, clientToken: session.clientToken)
        default: issuer.deleteUser("user_2issuer")
        }
        #expect(throws: reason) {
            try issuer.sessionToken(sessionID: session.sessionID, clientToken: session.clientToken)
        }
        #expect(throws: SessionIssuer.Refusal.unknownClient) {
            try issuer.sessionToken(sessionID: session.sessionID, clientToken: "client_not-the-right-one")
        }
    }
}
