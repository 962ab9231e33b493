// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TokenKitHummingbird
import TokenKitLogCheck
import TokenKitTestSupport
import TokenVerification

@Suite(.logLeakCheck()) struct DPoPVerificationMiddlewareTests {
    /// The one instant of every proof and of the verifier: a proof is never judged old, however slowly the test runs.
    static let now = Date()
    static let origin = "https://api.hummingbird.example.com"
    static let issuer = TestTokenIssuer(url: "https://clerk.hummingbird.example.com", keyID: "hb-dpop-1")

    /// A client with a new key and a token of the issuer bound to it.
    static func client() -> BoundTokenClient {
        BoundTokenClient(origin: origin, issuer: issuer, subject: "user_2hbDPOP", now: { Self.now })
    }

    static func application(nonces: DPoPNonces? = nil) -> some ApplicationProtocol {
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: Self.issuer.url, audience: .notChecked(reason: "test tokens carry no aud")),
            keySource: StaticJWKSSource(try! JWKSet(json: Self.issuer.keySetJSON)))
        let authenticator = DPoPAuthenticator(
            tokens: BearerAuthenticator(verifier: verifier),
            proofs: DPoPVerifier(
                configuration: .init(nonces: nonces), replayCache: InMemoryDPoPReplayCache(), now: { Self.now }))
        let router = Router(context: BasicBearerAuthRequestContext.self)
        router.group("orders")
            .add(middleware: DPoPVerificationMiddleware(authenticator: authenticator, origin: Self.origin + "/"))
            .get { _, context in try context.requireIdentity().userId }
        return Application(router: router)
    }

    static func headers(authorization: String, proof: String?) -> HTTPFields {
        var fields = HTTPFields()
        fields[.authorization] = authorization
        if let proof { fields[HTTPField.Name("DPoP")!] = proof }
        return fields
    }

    @Test func aBoundTokenWithItsProofReachesTheRouteOnceAndAReplayIsA401() async throws {
        let client = Self.client()
        let token = client.token
        let headers = Self.headers(authorization: "DPoP \(token)", proof: try client.proof(token: token))
        try await Self.application().test(.router) { http in
            let first = try await http.execute(uri: "/orders", method: .get, headers: headers)
            #expect(first.status == .ok)
            #expect(String(buffer: first.body) == "user_2hbDPOP")
            #expect(first.headers[HTTPField.Name("DPoP-Nonce")!] == nil)
            let replay = try await http.execute(uri: "/orders", method: .get, headers: headers)
            #expect(replay.status == .unauthorized)
            #expect(String(buffer: replay.body) == #"{"error": "Invalid DPoP proof"}"#)
            #expect(
                replay.headers[.wwwAuthenticate]
                    == #"DPoP error="invalid_dpop_proof", error_description="The DPoP proof was already used", algs="ES256 ES384 EdDSA PS256 RS256""#
            )
        }
    }

    @Test func aProofForAnotherPathOrABoundTokenAsBearerIsRefused() async throws {
        let client = Self.client()
        let token = client.token
        try await Self.application().test(.router) { http in
            let otherPath = try await http.execute(
                uri: "/orders", method: .get,
                headers: Self.headers(
                    authorization: "DPoP \(token)", proof: try client.proof(path: "/admin", token: token))
            )
            #expect(otherPath.status == .unauthorized)
            #expect(otherPath.headers[.wwwAuthenticate]?.hasPrefix(#"DPoP error="invalid_dpop_proof""#) == true)
            let bearer = try await http.execute(
                uri: "/orders", method: .get, headers: Self.headers(authorization: "Bearer \(token)", proof: nil))
            #expect(bearer.status == .unauthorized)
            #expect(bearer.headers[.wwwAuthenticate]?.hasPrefix(#"DPoP error="invalid_token""#) == true)
            let none = try await http.execute(uri: "/orders", method: .get, headers: [:])
            #expect(none.status == .unauthorized)
            #expect(none.headers[.wwwAuthenticate] == #"DPoP algs="ES256 ES384 EdDSA PS256 RS256""#)
        }
    }

    @Test func aServerNonceIsAskedForThenSentOnEveryAcceptedAnswer() async throws {
        let nonces = try #require(DPoPNonces(secret: Array(repeating: 3, count: 32)))
        let client = Self.client()
        let token = client.token
        try await Self.application(nonces: nonces).test(.router) { http in
            let first = try await http.execute(
                uri: "/orders", method: .get,
                headers: Self.headers(authorization: "DPoP \(token)", proof: try client.proof(token: token)))
            #expect(first.status == .unauthorized)
            #expect(first.headers[.wwwAuthenticate]?.hasPrefix(#"DPoP error="use_dpop_nonce""#) == true)
            let nonce = try #require(first.headers[HTTPField.Name("DPoP-Nonce")!])
            // The prover takes the server's nonce and puts it in its next proof.
            #expect(client.learn(nonce: nonce))
            let retried = try await http.execute(
                uri: "/orders", method: .get,
                headers: Self.headers(authorization: "DPoP \(token)", proof: try client.proof(token: token)))
            #expect(retried.status == .ok)
            #expect(retried.headers[HTTPField.Name("DPoP-Nonce")!] != nil)
        }
    }
}
#endif
