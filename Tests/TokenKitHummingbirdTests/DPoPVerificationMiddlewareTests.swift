// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TokenKitHummingbird
import TokenKitLogCheck
import TokenVerification
import _CryptoExtras

/// A DPoP client for the middleware tests: a P-256 key, tokens bound to it, and proofs for `/orders`.
struct DPoPClient {
    static let origin = "https://api.hummingbird.example.com"
    let key = P256.Signing.PrivateKey()

    var jwk: String {
        let point = key.publicKey.x963Representation.dropFirst()
        return #"{"kty":"EC","crv":"P-256","x":"\#(Issuer.base64URL(point.prefix(32)))","#
            + #""y":"\#(Issuer.base64URL(point.suffix(32)))"}"#
    }

    var thumbprint: String {
        let point = key.publicKey.x963Representation.dropFirst()
        let canonical =
            #"{"crv":"P-256","kty":"EC","x":"\#(Issuer.base64URL(point.prefix(32)))","#
            + #""y":"\#(Issuer.base64URL(point.suffix(32)))"}"#
        return Issuer.base64URL(SHA256.hash(data: Array(canonical.utf8)))
    }

    /// An RS256 access token of the test issuer bound to this key, valid for an hour.
    func token() -> String {
        let now = Int(Date().timeIntervalSince1970)
        let payload =
            #"{"iss":"\#(Issuer.url)","sub":"user_2hbDPOP","iat":\#(now),"exp":\#(now + 3600),"#
            + #""cnf":{"jkt":"\#(thumbprint)"}}"#
        let input =
            Issuer.base64URL(Array(#"{"alg":"RS256","typ":"at+jwt","kid":"hb-1"}"#.utf8)) + "."
            + Issuer.base64URL(Array(payload.utf8))
        let signature = try! Issuer.key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
        let token = input + "." + Issuer.base64URL(signature.rawRepresentation)
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    /// A fresh proof for `method` and `path` with `token`'s hash and, if given, a server nonce.
    func proof(method: String = "GET", path: String = "/orders", token: String, nonce: String? = nil) -> String {
        let ath = Issuer.base64URL(SHA256.hash(data: Array(token.utf8)))
        let nonceMember = nonce.map { #","nonce":"\#($0)""# } ?? ""
        let payload =
            #"{"jti":"\#(UUID().uuidString)","htm":"\#(method)","htu":"\#(Self.origin)\#(path)","#
            + #""iat":\#(Int(Date().timeIntervalSince1970)),"ath":"\#(ath)"\#(nonceMember)}"#
        let input =
            Issuer.base64URL(Array(#"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(jwk)}"#.utf8)) + "."
            + Issuer.base64URL(Array(payload.utf8))
        let signature = try! key.signature(for: SHA256.hash(data: Array(input.utf8)))
        let proof = input + "." + Issuer.base64URL(signature.rawRepresentation)
        TestSecrets.shared.register(proof, as: .accessToken)
        return proof
    }
}

@Suite(.logLeakCheck()) struct DPoPVerificationMiddlewareTests {
    static func application(nonces: DPoPNonces? = nil) -> some ApplicationProtocol {
        let verifier = TokenVerifier(
            configuration: .init(issuer: Issuer.url, audience: .notChecked(reason: "test tokens carry no aud")),
            keySource: StaticJWKSSource(Issuer.keySet))
        let authenticator = DPoPAuthenticator(
            tokens: BearerAuthenticator(verifier: verifier),
            proofs: DPoPVerifier(configuration: .init(nonces: nonces), replayCache: InMemoryDPoPReplayCache()))
        let router = Router(context: BasicBearerAuthRequestContext.self)
        router.group("orders")
            .add(middleware: DPoPVerificationMiddleware(authenticator: authenticator, origin: DPoPClient.origin + "/"))
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
        let client = DPoPClient()
        let token = client.token()
        let headers = Self.headers(authorization: "DPoP \(token)", proof: client.proof(token: token))
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
        let client = DPoPClient()
        let token = client.token()
        try await Self.application().test(.router) { http in
            let otherPath = try await http.execute(
                uri: "/orders", method: .get,
                headers: Self.headers(authorization: "DPoP \(token)", proof: client.proof(path: "/admin", token: token))
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
        let client = DPoPClient()
        let token = client.token()
        try await Self.application(nonces: nonces).test(.router) { http in
            let first = try await http.execute(
                uri: "/orders", method: .get,
                headers: Self.headers(authorization: "DPoP \(token)", proof: client.proof(token: token)))
            #expect(first.status == .unauthorized)
            #expect(first.headers[.wwwAuthenticate]?.hasPrefix(#"DPoP error="use_dpop_nonce""#) == true)
            let nonce = try #require(first.headers[HTTPField.Name("DPoP-Nonce")!])
            let retried = try await http.execute(
                uri: "/orders", method: .get,
                headers: Self.headers(authorization: "DPoP \(token)", proof: client.proof(token: token, nonce: nonce)))
            #expect(retried.status == .ok)
            #expect(retried.headers[HTTPField.Name("DPoP-Nonce")!] != nil)
        }
    }
}
#endif
