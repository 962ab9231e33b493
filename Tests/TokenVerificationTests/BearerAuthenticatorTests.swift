import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// The framework-neutral entry point answers as the diet-app backend's contract says.
@Suite(.logLeakCheck()) struct BearerAuthenticatorTests {
    static let authenticator = BearerAuthenticator(verifier: TestKeys.verifier())

    @Test(arguments: [nil, "", "Bearer", "Bearer ", "Bearer    ", "Basic dXNlcjpwYXNz", "Bearerx abc", "Token abc"])
    func aMissingBearerIsAnswered(_ header: String?) async {
        guard case .rejected(let answer) = await Self.authenticator.authenticate(authorization: header) else {
            Issue.record("authenticated")
            return
        }
        #expect(answer.status == 401)
        #expect(answer.body == #"{"error": "Missing authorization header"}"#)
        #expect(answer.wwwAuthenticate == "Bearer")
        #expect(answer.error == .missingAuthorization)
    }

    @Test func aValidTokenAuthenticates() async throws {
        let token = TestKeys.token(.rs256)
        for header in ["Bearer \(token)", "bearer \(token)", "BEARER  \(token) "] {
            guard case .authenticated(let claims) = await Self.authenticator.authenticate(authorization: header) else {
                Issue.record("rejected")
                continue
            }
            #expect(claims.subject == "user_2abc")
            #expect(claims.sessionID == "sess_9xyz")
        }
    }

    @Test func anInvalidTokenIsAnsweredWithAChallenge() async {
        let token = TestKeys.token(.rs256, payload: TestKeys.claims(exp: "1799999000"))
        guard case .rejected(let answer) = await Self.authenticator.authenticate(authorization: "Bearer \(token)")
        else {
            Issue.record("authenticated")
            return
        }
        #expect(answer.status == 401)
        #expect(answer.body == #"{"error": "Invalid token"}"#)
        #expect(answer.wwwAuthenticate == #"Bearer error="invalid_token", error_description="The token has expired""#)
        #expect(answer.headers.map(\.name) == ["Content-Type", "WWW-Authenticate"])
        #expect(!answer.body.contains(token) && !(answer.wwwAuthenticate ?? "").contains(token))
    }

    @Test func noUsableKeySetIsA503() async {
        let fetcher = ScriptedFetcher(steps: [.failure])
        let clock = ManualClock()
        let source = RemoteJWKSSource(jwksURL: ScriptedFetcher.url, clock: clock, fetch: fetcher.fetch)
        let authenticator = BearerAuthenticator(verifier: TestKeys.verifier(source: source, clock: clock))
        let outcome = await authenticator.authenticate(authorization: "Bearer \(TestKeys.token(.rs256))")
        guard case .rejected(let answer) = outcome else {
            Issue.record("authenticated")
            return
        }
        #expect(answer.status == 503)
        #expect(answer.wwwAuthenticate == nil)
        #expect(answer.error == .keySetUnavailable)
    }

    @Test func everyChallengeIsAValidQuotedString() {
        let errors: [TokenVerificationError] = [
            .malformedToken, .tokenTooLong, .duplicateJSONName, .unsignedToken, .algorithmNotAllowed,
            .unsupportedCriticalHeader, .untrustedKeyReference, .invalidKeyID, .typeMismatch, .missingClaim("x"),
            .invalidClaim("x"), .expired, .notYetValid, .issuedInFuture, .tokenTooOld, .issuerMismatch,
            .audienceMismatch, .partyNotAllowed, .missingKeyID, .unknownKeyID, .keyAlgorithmMismatch, .weakKey,
            .invalidSignature,
        ]
        #expect(Set(errors.map(\.reason)).count == errors.count)
        for error in errors {
            let description = error.safeDescription
            #expect(
                description.unicodeScalars.allSatisfy {
                    $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\"
                })
            #expect(error.wwwAuthenticate?.hasPrefix(#"Bearer error="invalid_token""#) == true)
        }
    }
}
