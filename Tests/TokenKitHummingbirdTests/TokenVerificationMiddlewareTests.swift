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
import TokenKitTesting
import TokenVerification
import _CryptoExtras

/// Keys and tokens made at run time; every token is registered with the log leak check.
enum Issuer {
    static let url = "https://clerk.hummingbird.example.com"
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let otherKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static var keySet: JWKSet {
        let primitives = try! key.publicKey.getKeyPrimitives()
        let jwk =
            #"{"kty":"RSA","alg":"RS256","kid":"hb-1","n":"\#(base64URL(primitives.modulus))","#
            + #""e":"\#(base64URL(primitives.publicExponent))"}"#
        return try! JWKSet(json: Data(#"{"keys":[\#(jwk)]}"#.utf8))
    }

    /// An RS256 token with `sub` and, unless `nil`, `sid`; valid for an hour unless `exp` says otherwise.
    static func token(
        sub: String = "user_2hbABCDEF", sid: String? = "sess_2hbXYZ123", exp: Int? = nil,
        signedBy signer: _RSA.Signing.PrivateKey = key
    ) -> String {
        let now = Int(Date().timeIntervalSince1970)
        let sidMember = sid.map { #","sid":"\#($0)""# } ?? ""
        let payload = #"{"iss":"\#(url)","sub":"\#(sub)"\#(sidMember),"iat":\#(now),"exp":\#(exp ?? now + 3600)}"#
        let input =
            base64URL(Array(#"{"alg":"RS256","typ":"JWT","kid":"hb-1"}"#.utf8)) + "."
            + base64URL(Array(payload.utf8))
        let signature = try! signer.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
        let token = input + "." + base64URL(signature.rawRepresentation)
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }
}

/// A key source whose JWKS endpoint is down.
struct UnavailableSource: JWKSSource {
    func key(for keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK {
        throw .keySetUnavailable
    }
    func isPublished(_ key: JWK) -> Bool { false }
}

/// The `/users/me` answer of the diet-app backend.
struct Me: ResponseCodable, Equatable {
    let userId: String
    let sessionId: String?
}

@Suite(.logLeakCheck()) struct TokenVerificationMiddlewareTests {
    static func application(source: any JWKSSource = StaticJWKSSource(Issuer.keySet)) -> some ApplicationProtocol {
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: Issuer.url, audience: .notChecked(reason: "Clerk session tokens carry no aud")),
            keySource: source)
        let router = Router(context: BasicBearerAuthRequestContext.self)
        router.get("health") { _, _ in "ok" }
        router.group("users")
            .add(middleware: TokenVerificationMiddleware(verifier: verifier))
            .get("me") { _, context in
                Me(userId: try context.requireIdentity().userId, sessionId: context.sessionId)
            }
        return Application(router: router)
    }

    static func get(
        _ uri: String, authorization: String?, source: any JWKSSource = StaticJWKSSource(Issuer.keySet)
    ) async throws -> TestResponse {
        var fields = HTTPFields()
        if let authorization { fields[.authorization] = authorization }
        let headers = fields
        return try await application(source: source).test(.router) { client in
            try await client.execute(uri: uri, method: .get, headers: headers)
        }
    }

    @Test func aValidTokenReachesTheRouteWithItsIdentity() async throws {
        let response = try await Self.get("/users/me", authorization: "Bearer \(Issuer.token())")
        #expect(response.status == .ok)
        let me = try JSONDecoder().decode(Me.self, from: Data(String(buffer: response.body).utf8))
        #expect(me == Me(userId: "user_2hbABCDEF", sessionId: "sess_2hbXYZ123"))
    }

    @Test func aTokenWithoutSidHasNoSession() async throws {
        let response = try await Self.get("/users/me", authorization: "Bearer \(Issuer.token(sid: nil))")
        #expect(response.status == .ok)
        let me = try JSONDecoder().decode(Me.self, from: Data(String(buffer: response.body).utf8))
        #expect(me == Me(userId: "user_2hbABCDEF", sessionId: nil))
    }

    @Test(arguments: [nil, "", "Bearer", "Basic dXNlcjpwYXNzd29yZA=="])
    func aMissingBearerIsA401(_ authorization: String?) async throws {
        let response = try await Self.get("/users/me", authorization: authorization)
        #expect(response.status == .unauthorized)
        #expect(String(buffer: response.body) == #"{"error": "Missing authorization header"}"#)
        #expect(response.headers[.wwwAuthenticate] == "Bearer")
        #expect(response.headers[.contentType] == "application/json")
    }

    @Test func anExpiredTokenIsA401WithAChallenge() async throws {
        let expired = Issuer.token(exp: Int(Date().timeIntervalSince1970) - 3600)
        let response = try await Self.get("/users/me", authorization: "Bearer \(expired)")
        #expect(response.status == .unauthorized)
        #expect(String(buffer: response.body) == #"{"error": "Invalid token"}"#)
        #expect(
            response.headers[.wwwAuthenticate]
                == #"Bearer error="invalid_token", error_description="The token has expired""#)
    }

    @Test func aTokenSignedByAnotherKeyIsA401() async throws {
        let forged = Issuer.token(signedBy: Issuer.otherKey)
        let response = try await Self.get("/users/me", authorization: "Bearer \(forged)")
        #expect(response.status == .unauthorized)
        #expect(String(buffer: response.body) == #"{"error": "Invalid token"}"#)
        #expect(response.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
    }

    @Test func noUsableKeySetIsA503WithoutChallenge() async throws {
        let response = try await Self.get(
            "/users/me", authorization: "Bearer \(Issuer.token())", source: UnavailableSource())
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers[.wwwAuthenticate] == nil)
    }

    @Test func unguardedRoutesNeedNoToken() async throws {
        let response = try await Self.get("/health", authorization: nil)
        #expect(response.status == .ok)
    }

    @Test func theRejectionDescriptionIsSafeToLog() async throws {
        let token = Issuer.token(signedBy: Issuer.otherKey)
        let authenticator = BearerAuthenticator(
            verifier: TokenVerifier(
                configuration: .init(
                    issuer: Issuer.url, audience: .notChecked(reason: "Clerk session tokens carry no aud")),
                keySource: StaticJWKSSource(Issuer.keySet)))
        guard case .rejected(let rejection) = await authenticator.authenticate(authorization: "Bearer \(token)") else {
            Issue.record("a forged token was accepted")
            return
        }
        let error = BearerRejection(rejection)
        #expect(error.description == "BearerRejection(401, invalidSignature)")
        #expect(!error.description.contains(token))
    }
}
#endif
