import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenVerification

/// `BearerAuthenticator.jwks`, the one-call backend setup, against a JWKS served over loopback HTTP; and what an
/// unreachable key set leaves in the log.
@Suite(.logLeakCheck())
struct JWKSShortcutTests {
    /// Claims valid now, by the wall clock (the shortcut's verifier reads it).
    private static func claimsValidNow() -> String {
        let now = Int(Date().timeIntervalSince1970)
        return #"{"sub":"user_2abc","sid":"sess_9xyz","iss":"\#(TestKeys.issuer)","iat":\#(now - 1),"#
            + #""exp":\#(now + 60)}"#
    }

    private static func serving(_ document: Data) throws -> LoopbackServer {
        try LoopbackServer { _, _ in
            LoopbackServer.Response(status: 200, headers: [("Content-Type", "application/json")], body: document)
        }
    }

    @Test func anES256TokenVerifiesWhenTheKeySetDeclaresES256() async throws {
        let key = TestKeys.p256JWK().replacingOccurrences(of: #""kid":"ec-1""#, with: #""kid":"ec-1","alg":"ES256""#)
        let server = try Self.serving(TestKeys.jwks([key]))
        defer { server.stop() }
        let authenticator = BearerAuthenticator.jwks(
            URL(string: "http://127.0.0.1:\(server.port)/jwks.json")!, issuer: TestKeys.issuer,
            audience: TestKeys.noAudience)
        let token = TestKeys.token(.es256, payload: Self.claimsValidNow())
        let outcome = await authenticator.authenticate(authorization: "Bearer \(token)")
        guard case .authenticated(let claims) = outcome else {
            Issue.record("an ES256 token whose key the JWKS publishes as ES256 was refused: \(outcome)")
            return
        }
        #expect(claims.subject == "user_2abc")
    }

    @Test func aKeyVerifiesOnlyTheAlgorithmItDeclaresAndNeverHMAC() async throws {
        // The RSA key declares RS256: a PS256 token signed by the same key is refused, and so is an HS256 token whose
        // "secret" would be the public key.
        let server = try Self.serving(TestKeys.jwks([TestKeys.rsaJWK(alg: "RS256")]))
        defer { server.stop() }
        let authenticator = BearerAuthenticator.jwks(
            URL(string: "http://127.0.0.1:\(server.port)/jwks.json")!, issuer: TestKeys.issuer,
            audience: TestKeys.noAudience)
        let accepted = await authenticator.authenticate(
            authorization: "Bearer \(TestKeys.token(.rs256, payload: Self.claimsValidNow()))")
        #expect({ if case .authenticated = accepted { true } else { false } }())
        for algorithm in [JWSAlgorithm.ps256, .hs256] {
            let kid = algorithm == .hs256 ? "rsa-1" : nil
            let token = TestKeys.token(algorithm, kid: kid, payload: Self.claimsValidNow())
            let outcome = await authenticator.authenticate(authorization: "Bearer \(token)")
            guard case .rejected(let answer) = outcome else {
                Issue.record("a \(algorithm.name) token was accepted by a key that declares RS256")
                continue
            }
            #expect(answer.status == 401)
        }
    }

    @Test func anUnreachableKeySetIsLoggedAtWarningLevelWithoutTheToken() async throws {
        let logs = LogCapture()
        let fetcher = ScriptedFetcher(steps: [.failure])
        let source = RemoteJWKSSource(
            jwksURL: ScriptedFetcher.url, clock: ManualClock(), logger: logs.logger("TokenVerification"),
            fetch: fetcher.fetch)
        let verifier = TokenVerifier(
            configuration: .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience), keySource: source)
        let token = TestKeys.token(.rs256, payload: Self.claimsValidNow())
        let outcome = await BearerAuthenticator(verifier: verifier).authenticate(authorization: "Bearer \(token)")
        guard case .rejected(let answer) = outcome else {
            Issue.record("a token was accepted while the key set could not be fetched")
            return
        }
        #expect(answer.status == 503)
        let warnings = logs.lines.filter { $0.hasPrefix("warning ") && $0.contains("JWKS fetch failed") }
        #expect(warnings.count == 1, "\(logs.lines)")
        #expect(warnings.allSatisfy { $0.contains("clerk.example.com") && !$0.contains(token) })
    }
}
