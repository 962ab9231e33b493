// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Crypto
    import Foundation
    import Testing
    import TokenKitLogCheck
    import TokenKitTesting
    import TokenKitVapor
    import TokenVerification
    import Vapor
    import VaporTesting
    import _CryptoExtras

    /// Keys and tokens made at run time; every token is registered with the log leak check.
    enum Issuer {
        static let url = "https://clerk.vapor.example.com"
        static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
        static let rotatedKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
        static let otherKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

        static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }

        static func jwk(_ key: _RSA.Signing.PrivateKey, kid: String) -> String {
            let primitives = try! key.publicKey.getKeyPrimitives()
            return #"{"kty":"RSA","alg":"RS256","kid":"\#(kid)","n":"\#(base64URL(primitives.modulus))","#
                + #""e":"\#(base64URL(primitives.publicExponent))"}"#
        }

        /// A token that expired an hour ago.
        static func expiredToken() -> String { token(exp: Int(Date().timeIntervalSince1970) - 3600) }

        /// The JWKS document with `key` as `v-1` and, after the rotation, `rotatedKey` as `v-2`.
        static func document(rotated: Bool = false) -> Data {
            let keys = [jwk(key, kid: "v-1")] + (rotated ? [jwk(rotatedKey, kid: "v-2")] : [])
            return Data(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8)
        }

        static var keySet: JWKSet { try! JWKSet(json: document()) }

        /// An RS256 token with `sub` and `sid`; valid for an hour unless `exp` says otherwise.
        static func token(
            iss: String = url, exp: Int? = nil, kid: String = "v-1", signedBy signer: _RSA.Signing.PrivateKey = key
        ) -> String {
            let now = Int(Date().timeIntervalSince1970)
            let payload =
                #"{"iss":"\#(iss)","sub":"user_2vpABCDEF","sid":"sess_2vpXYZ123","iat":\#(now),"#
                + #""exp":\#(exp ?? now + 3600)}"#
            let input =
                base64URL(Array(#"{"alg":"RS256","typ":"JWT","kid":"\#(kid)"}"#.utf8)) + "."
                + base64URL(Array(payload.utf8))
            let signature = try! signer.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
            let token = input + "." + base64URL(signature.rawRepresentation)
            TestSecrets.shared.register(token, as: .accessToken)
            return token
        }
    }

    /// The answer to an expired Bearer, whichever Vapor piece gives it: RFC 6750's 401 with the reason, as
    /// Hummingbird answers.
    func expectExpiredTokenChallenge(_ response: TestingHTTPResponse, sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(response.status == .unauthorized, sourceLocation: sourceLocation)
        #expect(response.body.string == #"{"error": "Invalid token"}"#, sourceLocation: sourceLocation)
        #expect(
            response.headers.first(name: .wwwAuthenticate)
                == #"Bearer error="invalid_token", error_description="The token has expired""#,
            sourceLocation: sourceLocation)
    }

    /// A key source whose JWKS endpoint is down.
    struct UnavailableSource: JWKSSource {
        func key(for keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK {
            throw .keySetUnavailable
        }
        func isPublished(_ key: JWK) -> Bool { false }
    }

    /// The `/users/me` answer of the diet-app backend.
    struct Me: Content, Equatable {
        let userId: String
        let sessionId: String?
    }

    func verifier(source: any JWKSSource = StaticJWKSSource(Issuer.keySet)) -> TokenVerifier {
        TokenVerifier(
            configuration: .init(
                issuer: Issuer.url, audience: .notChecked(reason: "Clerk session tokens carry no aud")),
            keySource: source)
    }

    /// The seed's contract through ``TokenVerificationMiddleware``: `/users/me` guarded, `/health` open.
    @Suite(.logLeakCheck()) struct TokenVerificationMiddlewareTests {
        static func withDietApp(
            source: any JWKSSource = StaticJWKSSource(Issuer.keySet), _ body: (Application) async throws -> Void
        ) async throws {
            try await withApp(
                configure: { app in
                    app.get("health") { _ in "ok" }
                    app.grouped("users").grouped(TokenVerificationMiddleware(verifier: verifier(source: source)))
                        .get("me") { req in
                            let identity = try req.auth.require(BearerIdentity.self)
                            return Me(userId: identity.userId, sessionId: identity.sessionId)
                        }
                }, body)
        }

        static func me(_ app: Application, authorization: String?) async throws -> TestingHTTPResponse {
            var headers = HTTPHeaders()
            if let authorization { headers.add(name: .authorization, value: authorization) }
            return try await app.testing().sendRequest(.GET, "users/me", headers: headers)
        }

        @Test func aValidTokenReachesTheRouteWithItsIdentityInReqAuth() async throws {
            try await Self.withDietApp { app in
                let response = try await Self.me(app, authorization: "Bearer \(Issuer.token())")
                #expect(response.status == .ok)
                #expect(
                    try response.content.decode(Me.self) == Me(userId: "user_2vpABCDEF", sessionId: "sess_2vpXYZ123"))
            }
        }

        @Test(arguments: [nil, "", "Bearer", "Basic dXNlcjpwYXNzd29yZA=="])
        func aMissingBearerIsTheSeedsMissingHeader401(_ authorization: String?) async throws {
            try await Self.withDietApp { app in
                let response = try await Self.me(app, authorization: authorization)
                #expect(response.status == .unauthorized)
                #expect(response.body.string == #"{"error": "Missing authorization header"}"#)
                #expect(response.headers.first(name: .wwwAuthenticate) == "Bearer")
                #expect(response.headers.first(name: .contentType) == "application/json")
            }
        }

        @Test func garbageIsAnInvalidToken401() async throws {
            try await Self.withDietApp { app in
                let response = try await Self.me(app, authorization: "Bearer not.a.jwt")
                #expect(response.status == .unauthorized)
                #expect(response.body.string == #"{"error": "Invalid token"}"#)
                #expect(
                    response.headers.first(name: .wwwAuthenticate)?.hasPrefix(#"Bearer error="invalid_token""#) == true)
            }
        }

        @Test func anotherIssuersTokenIsAnInvalidToken401() async throws {
            try await Self.withDietApp { app in
                let foreign = Issuer.token(iss: "https://clerk.attacker.example.com")
                let response = try await Self.me(app, authorization: "Bearer \(foreign)")
                #expect(response.status == .unauthorized)
                #expect(response.body.string == #"{"error": "Invalid token"}"#)
            }
        }

        @Test func anExpiredTokenIsA401WithTheSameChallengeAsHummingbird() async throws {
            try await Self.withDietApp { app in
                expectExpiredTokenChallenge(try await Self.me(app, authorization: "Bearer \(Issuer.expiredToken())"))
            }
        }

        @Test func aTokenSignedByAnotherKeyIsA401() async throws {
            try await Self.withDietApp { app in
                let response = try await Self.me(
                    app, authorization: "Bearer \(Issuer.token(signedBy: Issuer.otherKey))")
                #expect(response.status == .unauthorized)
                #expect(response.body.string == #"{"error": "Invalid token"}"#)
            }
        }

        @Test func aMiddlewareInFrontReadsTheRefusalsReasonButNeverTheToken() async throws {
            let reasons = LockedReasons()
            try await withApp(
                configure: { app in
                    app.grouped(RefusalRecorder(reasons: reasons))
                        .grouped(
                            TokenVerificationMiddleware(verifier: verifier(source: StaticJWKSSource(Issuer.keySet)))
                        )
                        .get("users", "me") { _ in "ok" }
                },
                { app in
                    _ = try await Self.me(app, authorization: "Bearer \(Issuer.expiredToken())")
                    _ = try await Self.me(app, authorization: nil)
                    _ = try await Self.me(app, authorization: "Bearer \(Issuer.token())")
                })
            #expect(reasons.values == ["expired", "missingAuthorization", "none"])
        }

        @Test func noUsableKeySetIsA503WithoutChallenge() async throws {
            try await Self.withDietApp(source: UnavailableSource()) { app in
                let response = try await Self.me(app, authorization: "Bearer \(Issuer.token())")
                #expect(response.status == .serviceUnavailable)
                #expect(response.body.string == #"{"error": "Token verification unavailable"}"#)
                #expect(response.headers.first(name: .wwwAuthenticate) == nil)
            }
        }

        @Test func aRotatedKeyIsFetchedOnceAndThenServedFromTheCache() async throws {
            let clock = ManualClock()
            let fetches = LockedCounter()
            let source = RemoteJWKSSource(
                jwksURL: URL(string: "https://clerk.vapor.example.com/.well-known/jwks.json")!, clock: clock,
                fetch: { _ in
                    // The issuer rotates between the first fetch and the second.
                    .init(body: Issuer.document(rotated: fetches.increment() > 1), maxAge: .seconds(3600))
                })
            try await Self.withDietApp(source: source) { app in
                let before = try await Self.me(app, authorization: "Bearer \(Issuer.token())")
                #expect(before.status == .ok)
                #expect(source.fetchCount == 1)
                clock.advance(by: .seconds(31))  // past the unknown-kid cooldown
                let rotated = Issuer.token(kid: "v-2", signedBy: Issuer.rotatedKey)
                let first = try await Self.me(app, authorization: "Bearer \(rotated)")
                let second = try await Self.me(app, authorization: "Bearer \(rotated)")
                #expect(first.status == .ok && second.status == .ok)
                #expect(source.fetchCount == 2)
            }
        }

        @Test func unguardedRoutesNeedNoToken() async throws {
            try await Self.withDietApp { app in
                let health = try await app.testing().sendRequest(.GET, "health")
                #expect(health.status == .ok)
            }
        }
    }

    /// A counter for test doubles called from several tasks.
    final class LockedCounter: Sendable {
        private let count = Locked(0)
        /// Adds one and returns the new count.
        func increment() -> Int {
            count.withLock {
                $0 += 1; return $0
            }
        }
    }

    /// Records, after each answer, the reason `TokenVerificationMiddleware` refused the request (`none` if it did not).
    struct RefusalRecorder: AsyncMiddleware {
        let reasons: LockedReasons

        func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
            let response = try await next.respond(to: request)
            reasons.append(TokenVerificationMiddleware.rejection(of: request)?.error.reason ?? "none")
            return response
        }
    }

    /// Reasons in arrival order. `@unchecked Sendable`: `stored` is only touched while holding `lock`.
    final class LockedReasons: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [String] = []

        var values: [String] {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }

        func append(_ reason: String) {
            lock.lock()
            stored.append(reason)
            lock.unlock()
        }
    }
#endif
