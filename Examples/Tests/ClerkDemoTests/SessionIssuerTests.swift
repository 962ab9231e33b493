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

    func issuer(_ clock: ManualClock, _ configuration: SessionIssuer.Configuration = .init()) -> SessionIssuer {
        SessionIssuer(configuration: configuration, now: clock.wallClock, logger: Self.logger)
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

    func verifier(
        _ issuer: SessionIssuer, _ clock: ManualClock, algorithms: Set<JWSAlgorithm> = [.rs256]
    ) throws -> TokenVerifier {
        TokenVerifier(
            configuration: .init(
                issuer: issuer.issuer, audience: .notChecked(reason: "Clerk session tokens carry no aud"),
                algorithms: algorithms,
                allowedParties: [issuer.configuration.authorizedParty]),
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

    @Test func es256SessionTokensCarryAKidAndVerifyThroughAnECKeyInTheJWKS() async throws {
        let clock = ManualClock()
        let issuer = issuer(clock, .init(algorithm: .es256))
        let session = start(issuer)
        let token = try mint(issuer, session)
        let claims = try await verifier(issuer, clock, algorithms: [.es256]).verify(token)
        #expect(claims.algorithm == .es256)
        #expect(claims.keyID == issuer.currentKeyID)
        #expect(claims.sessionID == session.sessionID)
        let document = try JSONSerialization.jsonObject(with: issuer.jwksDocument) as? [String: [[String: String]]]
        let keys = try #require(document?["keys"])
        #expect(keys.count == 2)
        #expect(keys.allSatisfy { $0["kty"] == "EC" && $0["crv"] == "P-256" && $0["alg"] == "ES256" })
        // A verifier held to RS256, as the seed's backend is, refuses it.
        await #expect(throws: TokenVerificationError.algorithmNotAllowed) {
            try await verifier(issuer, clock).verify(token)
        }
    }

    @Test(arguments: [SessionIssuer.Algorithm.rs256, .es256])
    func theDiscoveryDocumentNamesTheIssuerTheJWKSAndTheAlgorithm(_ algorithm: SessionIssuer.Algorithm) throws {
        let issuer = issuer(ManualClock(), .init(issuer: "https://clerk.example.test", algorithm: algorithm))
        let jwks = try #require(URL(string: "https://clerk.example.test/v1/jwks"))
        let data = issuer.discoveryDocument(jwksURL: jwks)
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(document["issuer"] as? String == "https://clerk.example.test")
        #expect(document["jwks_uri"] as? String == "https://clerk.example.test/v1/jwks")
        #expect(document["id_token_signing_alg_values_supported"] as? [String] == [algorithm.name])
        #expect(document["subject_types_supported"] as? [String] == ["public"])
        #expect(issuer.stats.discoveryServed == 1)
    }

    @Test func withoutPrepublicationTheNewKeyAppearsAtTheRotationAndTheOldOneStaysUntilItsTokensExpire() async throws {
        let clock = ManualClock()
        let issuer = issuer(clock, .init(publishesNextKey: false))
        let session = start(issuer)
        let first = issuer.currentKeyID
        #expect(issuer.publishedKeyIDs == [first])
        let oldToken = try mint(issuer, session)
        let before = try verifier(issuer, clock)
        let second = try issuer.rotateKey()
        #expect(second != first)
        #expect(issuer.publishedKeyIDs == [second, first])
        // A set fetched before the rotation does not know the new key; one fetched after knows both.
        let newToken = try mint(issuer, session)
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await before.verify(newToken) }
        let after = try verifier(issuer, clock)
        #expect(try await after.verify(newToken).keyID == second)
        clock.advance(by: .seconds(59))
        #expect(try await after.verify(oldToken).keyID == first)
        clock.advance(by: .seconds(2))
        #expect(issuer.publishedKeyIDs == [second])
    }

    @Test func theIssuerIsTheServingServersURLUnlessConfigured() async throws {
        let server = DemoAuthServer(now: ManualClock().wallClock, logger: Self.logger)
        #expect(server.sessionIssuer.issuer == SessionIssuer.defaultIssuer)
        let baseURL = try await server.start()
        await server.stop()
        #expect(server.sessionIssuer.issuer == baseURL.absoluteString)
        let configured = DemoAuthServer(logger: Self.logger, issuer: .init(issuer: "https://clerk.example.test"))
        _ = try await configured.start()
        await configured.stop()
        #expect(configured.sessionIssuer.issuer == "https://clerk.example.test")
    }
}
