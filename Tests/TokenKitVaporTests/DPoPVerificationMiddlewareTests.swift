// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Crypto
    import Foundation
    import Testing
    import TokenKitLogCheck
    import TokenKitVapor
    import TokenVerification
    import Vapor
    import VaporTesting
    import _CryptoExtras

    /// A DPoP client for the middleware tests: a P-256 key, tokens bound to it, and proofs for `/orders`.
    struct DPoPClient {
        static let origin = "https://api.vapor.example.com"
        let key = P256.Signing.PrivateKey()

        var coordinates: (x: String, y: String) {
            let point = key.publicKey.x963Representation.dropFirst()
            return (Issuer.base64URL(point.prefix(32)), Issuer.base64URL(point.suffix(32)))
        }

        var jwk: String { #"{"kty":"EC","crv":"P-256","x":"\#(coordinates.x)","y":"\#(coordinates.y)"}"# }

        var thumbprint: String {
            let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(coordinates.x)","y":"\#(coordinates.y)"}"#
            return Issuer.base64URL(SHA256.hash(data: Array(canonical.utf8)))
        }

        /// An RS256 access token of the test issuer bound to this key, valid for an hour.
        func token() -> String {
            let now = Int(Date().timeIntervalSince1970)
            let payload =
                #"{"iss":"\#(Issuer.url)","sub":"user_2vpDPOP","iat":\#(now),"exp":\#(now + 3600),"#
                + #""cnf":{"jkt":"\#(thumbprint)"}}"#
            let input =
                Issuer.base64URL(Array(#"{"alg":"RS256","typ":"at+jwt","kid":"v-1"}"#.utf8)) + "."
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
        static func withOrdersApp(nonces: DPoPNonces? = nil, _ body: (Application) async throws -> Void) async throws {
            let authenticator = DPoPAuthenticator(
                tokens: BearerAuthenticator(verifier: verifier()),
                proofs: DPoPVerifier(configuration: .init(nonces: nonces), replayCache: InMemoryDPoPReplayCache()))
            try await withApp(
                configure: { app in
                    app.grouped(DPoPVerificationMiddleware(authenticator: authenticator, origin: DPoPClient.origin))
                        .get("orders") { req in try req.auth.require(BearerIdentity.self).userId }
                }, body)
        }

        static func orders(
            _ app: Application, authorization: String?, proof: String?
        ) async throws
            -> TestingHTTPResponse
        {
            var headers = HTTPHeaders()
            if let authorization { headers.add(name: .authorization, value: authorization) }
            if let proof { headers.add(name: "DPoP", value: proof) }
            return try await app.testing().sendRequest(.GET, "orders", headers: headers)
        }

        @Test func aBoundTokenWithItsProofReachesTheRouteOnceAndAReplayIsA401() async throws {
            let client = DPoPClient()
            let token = client.token()
            let proof = client.proof(token: token)
            try await Self.withOrdersApp { app in
                let first = try await Self.orders(app, authorization: "DPoP \(token)", proof: proof)
                #expect(first.status == .ok)
                #expect(first.body.string == "user_2vpDPOP")
                let replay = try await Self.orders(app, authorization: "DPoP \(token)", proof: proof)
                #expect(replay.status == .unauthorized)
                #expect(replay.body.string == #"{"error": "Invalid DPoP proof"}"#)
                #expect(
                    replay.headers.first(name: .wwwAuthenticate)
                        == #"DPoP error="invalid_dpop_proof", error_description="The DPoP proof was already used", algs="ES256 ES384 EdDSA PS256 RS256""#
                )
            }
        }

        @Test func aProofForAnotherPathOrABoundTokenAsBearerIsRefused() async throws {
            let client = DPoPClient()
            let token = client.token()
            try await Self.withOrdersApp { app in
                let otherPath = try await Self.orders(
                    app, authorization: "DPoP \(token)", proof: client.proof(path: "/admin", token: token))
                #expect(otherPath.status == .unauthorized)
                #expect(
                    otherPath.headers.first(name: .wwwAuthenticate)?.hasPrefix(#"DPoP error="invalid_dpop_proof""#)
                        == true)
                let bearer = try await Self.orders(app, authorization: "Bearer \(token)", proof: nil)
                #expect(bearer.status == .unauthorized)
                #expect(
                    bearer.headers.first(name: .wwwAuthenticate)?.hasPrefix(#"DPoP error="invalid_token""#) == true)
            }
        }

        @Test func aServerNonceIsAskedForThenSentOnEveryAcceptedAnswer() async throws {
            let nonces = try #require(DPoPNonces(secret: Array(repeating: 5, count: 32)))
            let client = DPoPClient()
            let token = client.token()
            try await Self.withOrdersApp(nonces: nonces) { app in
                let first = try await Self.orders(
                    app, authorization: "DPoP \(token)", proof: client.proof(token: token))
                #expect(first.status == .unauthorized)
                #expect(
                    first.headers.first(name: .wwwAuthenticate)?.hasPrefix(#"DPoP error="use_dpop_nonce""#) == true)
                let nonce = try #require(first.headers.first(name: "DPoP-Nonce"))
                let retried = try await Self.orders(
                    app, authorization: "DPoP \(token)", proof: client.proof(token: token, nonce: nonce))
                #expect(retried.status == .ok)
                #expect(retried.headers.first(name: "DPoP-Nonce") != nil)
            }
        }
    }
#endif
