import AuthToken
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh
import TokenVerification

extension Interop {
    /// RFC 9068 JWT access tokens from django-oauth-toolkit, verified by ``TokenVerifier`` through DOT's own OIDC
    /// discovery document and JWKS.
    ///
    /// DOT 3.4.1 issues opaque access tokens; the interop project's `ACCESS_TOKEN_GENERATOR`
    /// (`Interop/django/project/interop/access_tokens.py`) makes them RFC 9068 JWTs for the client `interop-jwt`,
    /// signed with DOT's OIDC key. DOT still issues, stores, checks (at `/api/me`), rotates and revokes them, and
    /// publishes the key. TokenKit signs in with the password grant and refreshes as for any client.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct DjangoJWTAccessToken {
        @Test func accessTokenVerifiesThroughDiscoveryWithTheRFC9068Rules() async throws {
            let server = try await InteropServer.prepared()
            let issuer = Self.issuer(server)
            let session = InteropSession(server, oauthClient: Credentials.jwtClient)
            let token = TestSecrets.shared.register(try await session.signIn())
            let refreshToken = try #require(token.refreshToken)
            // Compared outside #expect, so that a failure cannot print the token.
            let refreshTokenIsOpaque = !refreshToken.contains(".")
            #expect(refreshTokenIsOpaque, "the refresh token stays DOT's opaque string")
            #expect(token.lifetime == 3600)

            let keys = RemoteJWKSSource(location: .openIDDiscovery(issuer: try #require(URL(string: issuer))))
            let claims = try await Self.verifier(server, keys: keys).verify(token.accessToken)
            #expect(claims.issuer == issuer)
            #expect(claims.audience == [Self.resource(server)])
            #expect(claims.algorithm == .rs256)
            #expect(claims.keyID == (try await server.signingKeys()).active, "signed with DOT's OIDC key")
            #expect(!claims.subject.isEmpty)
            #expect(claims.string("client_id") == Credentials.jwtID)
            #expect(claims.string("scope") == "read write")
            #expect(claims.jwtID?.isEmpty == false)
            let issuedAt = try #require(claims.issuedAt)
            let expiration = try #require(claims.expiration)
            #expect(expiration.timeIntervalSince(issuedAt) == 3600, "exp - iat is DOT's ACCESS_TOKEN_EXPIRE_SECONDS")
            #expect(token.expirationClaim == expiration, "TokenKit read the same exp")
            #expect(keys.fetchCount == 1)

            // DOT itself accepts the JWT it stored, at its protected resource.
            let me = try await session.me()
            #expect(me.status == 200)
            #expect(me.user == Credentials.username)
            #expect(me.clientID == Credentials.jwtID)

            // The rules bite on DOT's real token.
            let idTokenType = TokenVerifier(
                configuration: Self.configuration(server, requiredType: "JWT"), keySource: keys)
            #expect(await failureReason(idTokenType, token.accessToken) == TokenVerificationError.typeMismatch.reason)
            let clientAsAudience = TokenVerifier(
                configuration: Self.configuration(server, audiences: [Credentials.jwtID]), keySource: keys)
            #expect(
                await failureReason(clientAsAudience, token.accessToken)
                    == TokenVerificationError.audienceMismatch.reason)
            var withoutPath = Self.configuration(server)
            withoutPath.issuer = server.baseURL.absoluteString
            #expect(
                await failureReason(TokenVerifier(configuration: withoutPath, keySource: keys), token.accessToken)
                    == TokenVerificationError.issuerMismatch.reason)
            let uncached = TokenVerifier(configuration: Self.configuration(server, cache: 0), keySource: keys)
            #expect(
                await failureReason(uncached, tampered(token.accessToken))
                    == TokenVerificationError.invalidSignature.reason)
            #expect(try await server.rawMe(tampered(token.accessToken)) == 401, "DOT refuses it too")
            #expect(keys.fetchCount == 1, "no refusal fetched the key set again")

            // Another client's access token is DOT's opaque string: not a JWT at all.
            let opaque = try await InteropSession(server).signIn()
            TestSecrets.shared.register(opaque)
            #expect(
                await failureReason(uncached, opaque.accessToken) == TokenVerificationError.malformedToken.reason)
        }

        @Test func expiryIsDOTsLifetimeWithTheVerifiersLeeway() async throws {
            var config = ServerConfig.baseline
            config.accessTokenExpireSeconds = 60
            let server = try await InteropServer.prepared(config: config)
            let token = TestSecrets.shared.register(
                try await InteropSession(server, oauthClient: Credentials.jwtClient).signIn())
            #expect(token.lifetime == 60)
            let keys = RemoteJWKSSource(jwksURL: Self.jwksURL(server))
            let claims = try await Self.verifier(server, keys: keys).verify(token.accessToken)
            let expiration = try #require(claims.expiration)
            #expect(expiration.timeIntervalSince(try #require(claims.issuedAt)) == 60)

            // The verifier's clock, set around DOT's exp: the 5 s default leeway, then none.
            func reason(at instant: Date, leeway: Duration = .seconds(5)) async -> String? {
                var configuration = Self.configuration(server, cache: 0)
                configuration.leeway = leeway
                let verifier = TokenVerifier(configuration: configuration, keySource: keys, now: { instant })
                return await failureReason(verifier, token.accessToken)
            }
            #expect(await reason(at: expiration.addingTimeInterval(-1), leeway: .zero) == nil)
            #expect(await reason(at: expiration.addingTimeInterval(4)) == nil, "inside the leeway")
            #expect(await reason(at: expiration.addingTimeInterval(6)) == TokenVerificationError.expired.reason)
            #expect(await reason(at: expiration, leeway: .zero) == TokenVerificationError.expired.reason)
            #expect(keys.fetchCount == 1, "an expired token never makes the source fetch")
        }

        @Test func refreshedAccessTokenVerifiesAndRevocationIsOnlyVisibleAtDOT() async throws {
            let server = try await InteropServer.prepared()
            let session = InteropSession(server, oauthClient: Credentials.jwtClient)
            let first = TestSecrets.shared.register(try await session.signIn())
            let verifier = Self.verifier(server, keys: RemoteJWKSSource(jwksURL: Self.jwksURL(server)))
            let firstClaims = try await verifier.verify(first.accessToken)

            // DOT expires the token server-side; TokenKit's 401 handling refreshes with the opaque refresh token.
            try await server.expireAccessTokens()
            let me = try await session.me()
            #expect(me.status == 200)
            let stats = try await server.stats()
            #expect(stats.refreshGrants == 1)
            #expect(stats.apiUnauthorized == 1)
            let second = TestSecrets.shared.register(try #require(session.client.currentToken))
            let rotated = second.accessToken != first.accessToken
            #expect(rotated, "a new access token")
            let secondClaims = try await verifier.verify(second.accessToken)
            #expect(secondClaims.subject == firstClaims.subject)
            #expect(secondClaims.string("client_id") == Credentials.jwtID)
            #expect(secondClaims.string("scope") == "read write")
            #expect(secondClaims.jwtID != firstClaims.jwtID)

            // What DOT knows and a local verifier cannot: DOT deleted the first token when it rotated, and forgets
            // the second when its refresh token is revoked (RFC 7009); both still verify until their exp.
            #expect(try await server.rawMe(first.accessToken) == 401)
            #expect(await failureReason(verifier, first.accessToken) == nil)
            try await server.revokeRefreshToken(try #require(second.refreshToken), as: Credentials.jwtClient)
            #expect(try await server.rawMe(second.accessToken) == 401)
            let uncached = TokenVerifier(
                configuration: Self.configuration(server, cache: 0),
                keySource: RemoteJWKSSource(jwksURL: Self.jwksURL(server)))
            #expect(await failureReason(uncached, second.accessToken) == nil)
        }

        @Test func keyRotationAtDOTIsFollowedWithinTheUnknownKeyCooldown() async throws {
            let server = try await InteropServer.prepared()
            let session = InteropSession(server, oauthClient: Credentials.jwtClient)
            let first = TestSecrets.shared.register(try await session.signIn())
            let clock = ManualClock()
            let keys = RemoteJWKSSource(
                location: .openIDDiscovery(issuer: try #require(URL(string: Self.issuer(server)))), clock: clock)
            let verifier = Self.verifier(server, keys: keys)
            let oldKey = try await verifier.verify(first.accessToken).keyID
            #expect(keys.fetchCount == 1)

            // DOT rotates: a new key signs, the old one is still published (inactive).
            let rotated = try await server.rotateSigningKey()
            #expect(rotated.inactive == [oldKey].compactMap { $0 })
            let second = TestSecrets.shared.register(
                try await session.client.refreshToken(afterRejectionOf: first.accessToken))
            #expect(
                await failureReason(verifier, second.accessToken) == TokenVerificationError.unknownKeyID.reason,
                "a new kid inside the 30 s cooldown is refused without a fetch")
            #expect(keys.fetchCount == 1)
            clock.advance(by: .seconds(31))
            let secondClaims = try await verifier.verify(second.accessToken)
            #expect(secondClaims.keyID == rotated.active)
            #expect(keys.fetchCount == 2, "one refetch for the new kid")
            #expect(await failureReason(verifier, first.accessToken) == nil, "the inactive key still verifies")

            // DOT retires the old key: once the set is refetched, its tokens are refused, cached or not.
            try await server.retireInactiveSigningKeys()
            await keys.refresh()
            #expect(keys.fetchCount == 3)
            #expect(await failureReason(verifier, first.accessToken) == TokenVerificationError.unknownKeyID.reason)
            #expect(await failureReason(verifier, second.accessToken) == nil)
        }

        /// DOT's issuer (its OIDC discovery says the same): `http://127.0.0.1:<port>/o`.
        static func issuer(_ server: InteropServer) -> String { server.baseURL.appending(path: "o").absoluteString }

        /// The `aud` the interop project gives its JWT access tokens: the protected resource.
        static func resource(_ server: InteropServer) -> String { server.baseURL.appending(path: "api").absoluteString }

        static func jwksURL(_ server: InteropServer) -> URL {
            server.baseURL.appending(path: "o/.well-known/jwks.json")
        }

        /// The RFC 9068 rules: `typ` `at+jwt`, the exact issuer, the resource as audience, RS256, and the claims
        /// section 2.2 requires.
        static func configuration(
            _ server: InteropServer, audiences: Set<String>? = nil, requiredType: String = "at+jwt",
            cache: Int = 10_000
        ) -> TokenVerifier.Configuration {
            TokenVerifier.Configuration(
                issuer: issuer(server), audience: .oneOf(audiences ?? [resource(server)]), algorithms: [.rs256],
                requiredClaims: ["exp", "aud", "client_id", "iat", "jti"], requiredType: requiredType,
                tokenCacheCapacity: cache)
        }

        static func verifier(_ server: InteropServer, keys: any JWKSSource) -> TokenVerifier {
            TokenVerifier(configuration: configuration(server), keySource: keys)
        }
    }
}
