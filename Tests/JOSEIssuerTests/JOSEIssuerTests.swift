import Foundation
import Testing
import TokenKitLogCheck
import TokenVerification

/// Tokens minted by PyJWT and by jwcrypto, two issuers nobody here wrote, verify through a ``JWKSet`` each library
/// exported, for every algorithm the verifier supports; the invalid ones are refused with the expected reason.
///
/// Needs `TOKENKIT_JOSE_FIXTURES` (`.ci/jose-interop` sets it); skipped without it.
@Suite(
    .logLeakCheck(),
    .enabled(
        if: JOSEFixtures.shared != nil,
        "TOKENKIT_JOSE_FIXTURES is not set: run .ci/jose-interop, or Interop/jose/generate.py DIR and set it to DIR")
)
struct JOSEIssuerTests {
    let fixtures: JOSEFixtures

    init() throws { fixtures = try #require(JOSEFixtures.shared) }

    @Test func everyExportedKeyParses() throws {
        let keySet = try JWKSet(json: fixtures.jwks)
        #expect(keySet.skipped.map(\.description) == [])
        // Nine asymmetric algorithms, one key each, from each library.
        #expect(keySet.keys.count == 18)
        #expect(Set(keySet.keys.compactMap(\.keyID)).count == 18)
    }

    @Test func everyAlgorithmIsCoveredByBothLibraries() {
        for library in ["pyjwt", "jwcrypto"] {
            let algorithms = Set(
                fixtures.manifest.tokens.filter { $0.library == library && $0.isValid }.map(\.alg))
            #expect(algorithms == Set(JWSAlgorithm.all.map(\.name)), "\(library)")
        }
    }

    @Test(arguments: JOSEFixtures.validNames)
    func aValidTokenVerifies(_ name: String) async throws {
        let entry = try #require(fixtures.entry(name))
        let expected = try #require(entry.claims)
        let claims = try await fixtures.verifier().verify(entry.token)
        #expect(claims.algorithm.name == entry.alg)
        #expect(claims.subject == expected.sub)
        #expect(claims.sessionID == expected.sid)
        #expect(claims.issuer == fixtures.manifest.issuer)
        #expect(claims.audience == expected.audience)
        #expect(claims.authorizedParty == expected.azp)
        #expect(claims.jwtID == expected.jti)
        #expect(claims.issuedAt == Date(timeIntervalSince1970: TimeInterval(expected.iat)))
        #expect(claims.notBefore == Date(timeIntervalSince1970: TimeInterval(expected.nbf)))
        #expect(claims.expiration == Date(timeIntervalSince1970: TimeInterval(expected.exp)))
        #expect(claims.members.keys.sorted() == expected.names)
        struct Payload: Decodable { let custom: JOSEFixtures.CustomClaims }
        #expect(try claims.decode(Payload.self).custom == expected.custom)
        #expect(claims.string("custom") == nil)
        if entry.alg.hasPrefix("HS") {
            #expect(claims.keyID == nil)
        } else {
            #expect(claims.keyID == "\(entry.library)-\(entry.alg.lowercased())")
        }
    }

    @Test(arguments: JOSEFixtures.invalidNames)
    func anInvalidTokenIsRefusedWithItsReason(_ name: String) async throws {
        let entry = try #require(fixtures.entry(name))
        let verifier = try fixtures.verifier()
        do {
            _ = try await verifier.verify(entry.token)
            Issue.record("\(name) verified")
        } catch {
            #expect(error.reason == entry.expect, "\(name)")
            #expect(error.isTokenProblem)
        }
    }

    @Test func aRepeatIsAnsweredFromTheVerifiedTokenCache() async throws {
        let verifier = try fixtures.verifier()
        let valid = fixtures.manifest.tokens.filter(\.isValid)
        for entry in valid { _ = try await verifier.verify(entry.token) }
        #expect(verifier.cachedTokenCount == valid.count)
        for entry in valid {
            let claims = try await verifier.verify(entry.token)
            #expect(claims.algorithm.name == entry.alg)
        }
        #expect(verifier.cachedTokenCount == valid.count)
    }

    @Test func theBearerAuthenticatorAnswersAsTheBackendContractSays() async throws {
        let authenticator = BearerAuthenticator(verifier: try fixtures.verifier())
        let valid = try #require(fixtures.manifest.tokens.first { $0.isValid && $0.library == "jwcrypto" })
        guard case .authenticated(let claims) = await authenticator.authenticate(authorization: "Bearer \(valid.token)")
        else {
            Issue.record("a valid jwcrypto token was rejected")
            return
        }
        #expect(claims.subject == valid.claims?.sub)
        let expired = try #require(fixtures.manifest.tokens.first { $0.expect == "expired" })
        guard case .rejected(let answer) = await authenticator.authenticate(authorization: "Bearer \(expired.token)")
        else {
            Issue.record("an expired token was accepted")
            return
        }
        #expect(answer.status == 401)
        #expect(answer.body == #"{"error": "Invalid token"}"#)
        #expect(answer.wwwAuthenticate == #"Bearer error="invalid_token", error_description="The token has expired""#)
    }
}
