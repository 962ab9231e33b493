// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Foundation
    import Testing
    import TokenKitLogCheck
    import TokenKitTestSupport
    import TokenKitVapor
    import TokenVerification
    import Vapor
    import VaporTesting

    @Suite(.logLeakCheck()) struct DPoPVerificationMiddlewareTests {
        /// The one instant of every proof and of the verifier: a proof is never judged old, however slowly the test runs.
        static let now = Date()
        static let origin = "https://api.vapor.example.com"
        static let issuer = TestTokenIssuer(url: "https://clerk.vapor.example.com", keyID: "v-dpop-1")

        /// A client with a new key and a token of the issuer bound to it.
        static func client() -> BoundTokenClient {
            BoundTokenClient(origin: origin, issuer: issuer, subject: "user_2vpDPOP", now: { Self.now })
        }

        static func withOrdersApp(nonces: DPoPNonces? = nil, _ body: (Application) async throws -> Void) async throws {
            let authenticator = DPoPAuthenticator(
                tokens: BearerAuthenticator(
                    verifier: TokenVerifier(
                        configuration: .init(
                            issuer: issuer.url, audience: .notChecked(reason: "test tokens carry no aud")),
                        keySource: StaticJWKSSource(try JWKSet(json: issuer.keySetJSON)))),
                proofs: DPoPVerifier(
                    configuration: .init(nonces: nonces), replayCache: InMemoryDPoPReplayCache(), now: { Self.now }))
            try await withApp(
                configure: { app in
                    app.grouped(DPoPVerificationMiddleware(authenticator: authenticator, origin: origin))
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
            let client = Self.client()
            let token = client.token
            let proof = try client.proof(token: token)
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
            let client = Self.client()
            let token = client.token
            try await Self.withOrdersApp { app in
                let otherPath = try await Self.orders(
                    app, authorization: "DPoP \(token)", proof: try client.proof(path: "/admin", token: token))
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
            let client = Self.client()
            let token = client.token
            try await Self.withOrdersApp(nonces: nonces) { app in
                let first = try await Self.orders(
                    app, authorization: "DPoP \(token)", proof: try client.proof(token: token))
                #expect(first.status == .unauthorized)
                #expect(
                    first.headers.first(name: .wwwAuthenticate)?.hasPrefix(#"DPoP error="use_dpop_nonce""#) == true)
                let nonce = try #require(first.headers.first(name: "DPoP-Nonce"))
                // The prover takes the server's nonce and puts it in its next proof.
                #expect(client.learn(nonce: nonce))
                let retried = try await Self.orders(
                    app, authorization: "DPoP \(token)", proof: try client.proof(token: token))
                #expect(retried.status == .ok)
                #expect(retried.headers.first(name: "DPoP-Nonce") != nil)
            }
        }
    }
#endif
