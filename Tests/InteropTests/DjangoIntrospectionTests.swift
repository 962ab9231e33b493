import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh
import TokenVerification

extension Interop {
    /// RFC 7662 introspection of DOT's opaque access tokens at DOT's own `/o/introspect/` (`IntrospectTokenView`),
    /// through ``BearerAuthenticator/introspection(_:client:audience:issuer:)`` and ``IntrospectionVerifier``, as the
    /// resource server `interop-resource-server` (confidential; DOT admits any client that authenticates).
    ///
    /// DOT answers `{"active": true, "scope", "exp", "client_id", "username"}` (no `sub`, no `iss`, `aud` only for
    /// RFC 8707-bound tokens), or `{"active": false}` for an unknown, expired or revoked token; a caller that fails
    /// client authentication gets a bare 403.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct DjangoIntrospection {
        static let resourceServerID = "interop-resource-server"
        static let resourceServerSecret = "interop-resource-server-secret"

        static func introspectURL(_ server: InteropServer) -> URL { server.baseURL.appending(path: "o/introspect/") }

        static func configuration(
            _ server: InteropServer,
            _ authentication: IntrospectionVerifier.ClientAuthentication = .clientSecretBasic(
                id: resourceServerID, secret: resourceServerSecret)
        ) -> IntrospectionVerifier.Configuration {
            TestSecrets.shared.register(resourceServerSecret, as: .clientSecret)
            return IntrospectionVerifier.Configuration(
                endpoint: introspectURL(server), clientAuthentication: authentication,
                audience: .notChecked(reason: "DOT binds an audience only to RFC 8707 resource-bound tokens"),
                subjectMember: "username")
        }

        /// Counts the calls that reach DOT (over the default URLSession send).
        final class Calls: Sendable {
            private let count = Locked(0)
            private let base = IntrospectionVerifier.urlSessionSend()
            var value: Int { count.withLock { $0 } }
            var send: IntrospectionVerifier.Send {
                { request in
                    self.count.withLock { $0 += 1 }
                    return try await self.base(request)
                }
            }
        }

        @Test func anActiveTokenAuthenticatesThroughTheIntrospectionDoor() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            let authenticator = BearerAuthenticator.introspection(
                Self.introspectURL(server),
                client: .clientSecretBasic(id: Self.resourceServerID, secret: Self.resourceServerSecret),
                audience: .notChecked(reason: "DOT binds no audience here"), subjectMember: "username")
            TestSecrets.shared.register(Self.resourceServerSecret, as: .clientSecret)
            guard
                case .authenticated(let claims) = await authenticator.authenticate(
                    authorization: "Bearer \(token.accessToken)")
            else {
                Issue.record("DOT's active token was rejected")
                return
            }
            // DOT sends no `sub`: the user is its `username`.
            #expect(claims.isIntrospected)
            #expect(claims.subject == Credentials.username)
            #expect(claims.string("username") == Credentials.username)
            #expect(claims.string("client_id") == Credentials.confidentialID)
            #expect(claims.string("scope") == "read write")
            #expect(claims.bool("active") == true)
            let expiration = try #require(claims.expiration)
            #expect(abs(expiration.timeIntervalSinceNow - 3600) < 120, "DOT's exp: the token's lifetime")
        }

        @Test func basicAndBodyAuthenticationBothWorkAndTheSubjectIsTheUsername() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            for authentication in [
                IntrospectionVerifier.ClientAuthentication.clientSecretBasic(
                    id: Self.resourceServerID, secret: Self.resourceServerSecret),
                .clientSecretPost(id: Self.resourceServerID, secret: Self.resourceServerSecret),
            ] {
                let verifier = IntrospectionVerifier(configuration: Self.configuration(server, authentication))
                let claims = try await verifier.verify(token.accessToken)
                #expect(claims.subject == Credentials.username, "\(authentication)")
                #expect(BearerIdentity(claims: claims).userId == Credentials.username)
            }
        }

        @Test func aTokenRevokedByRFC7009IsInactive() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            let clock = ManualClock()
            let calls = Calls()
            let cached = IntrospectionVerifier(
                configuration: Self.configuration(server), clock: clock, send: calls.send)
            _ = try await cached.verify(token.accessToken)

            try await Self.revokeAccessToken(server, token.accessToken)
            #expect(try await server.rawMe(token.accessToken) == 401, "DOT refuses it at its own resource")
            let fresh = BearerAuthenticator(
                introspection: IntrospectionVerifier(configuration: Self.configuration(server)))
            guard case .rejected(let answer) = await fresh.authenticate(authorization: "Bearer \(token.accessToken)")
            else {
                Issue.record("a revoked token was accepted")
                return
            }
            #expect(answer.status == 401)
            #expect(answer.error == .tokenInactive)
            #expect(answer.wwwAuthenticate?.contains(#"error="invalid_token""#) == true)

            // A verifier that cached the active answer keeps it for at most `maximumCacheDuration` (60 s).
            _ = try await cached.verify(token.accessToken)
            #expect(calls.value == 1)
            clock.advance(by: .seconds(61))
            await #expect(throws: TokenVerificationError.tokenInactive) { try await cached.verify(token.accessToken) }
            #expect(calls.value == 2)
        }

        @Test func anExpiredTokenIsInactive() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            let verifier = IntrospectionVerifier(configuration: Self.configuration(server))
            try await server.expireAccessTokens()
            await #expect(throws: TokenVerificationError.tokenInactive) { try await verifier.verify(token.accessToken) }
        }

        @Test func aWrongClientIsAnEndpointFailureNotAnInactiveToken() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            let wrongSecret = "not-the-resource-server-secret"
            TestSecrets.shared.register(wrongSecret, as: .clientSecret)
            for authentication in [
                IntrospectionVerifier.ClientAuthentication.clientSecretBasic(
                    id: Self.resourceServerID, secret: wrongSecret),
                .clientSecretPost(id: Self.resourceServerID, secret: wrongSecret),
                .clientSecretBasic(id: "interop-no-such-client", secret: wrongSecret),
            ] {
                let calls = Calls()
                let authenticator = BearerAuthenticator(
                    introspection: IntrospectionVerifier(
                        configuration: Self.configuration(server, authentication), send: calls.send))
                for _ in 0..<2 {
                    guard
                        case .rejected(let answer) = await authenticator.authenticate(
                            authorization: "Bearer \(token.accessToken)")
                    else {
                        Issue.record("accepted with a wrong client: \(authentication)")
                        continue
                    }
                    #expect(answer.error == .introspectionClientRejected, "\(authentication)")
                    #expect(answer.status == 503)
                    #expect(answer.wwwAuthenticate == nil)
                }
                #expect(calls.value == 2, "a failure is not cached: the next request asks again")
            }
            // The token itself is fine.
            _ = try await IntrospectionVerifier(configuration: Self.configuration(server)).verify(token.accessToken)
        }

        @Test func aHundredConcurrentRequestsWithOneTokenMakeOneCallToDOT() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            let calls = Calls()
            let authenticator = BearerAuthenticator(
                introspection: IntrospectionVerifier(configuration: Self.configuration(server), send: calls.send))
            let accepted = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        let outcome = await authenticator.authenticate(authorization: "Bearer \(token.accessToken)")
                        if case .authenticated = outcome { return true }
                        return false
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(accepted == 100)
            #expect(calls.value == 1)
        }

        @Test func aBearerTokenWithTheIntrospectionScopeAuthenticatesTheCaller() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            // The resource server's own token, by the client-credentials grant with DOT's `introspection` scope.
            var request = server.request(.post, "/o/token/")
            let basic = Data("\(Self.resourceServerID):\(Self.resourceServerSecret)".utf8).base64EncodedString()
            request.headerFields[.authorization] = "Basic \(basic)"
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            let (response, body) = try await server.transport.send(
                request, body: Data("grant_type=client_credentials&scope=introspection".utf8))
            #expect(response.status.code == 200)
            let json = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            let serverToken = try #require(json["access_token"] as? String)
            TestSecrets.shared.register(serverToken, as: .accessToken)

            let bearer = IntrospectionVerifier(configuration: Self.configuration(server, .bearer(serverToken)))
            #expect(try await bearer.verify(token.accessToken).subject == Credentials.username)
            // A token without the scope (alice's `read write`) is refused by DOT: this server's credentials, a 503.
            let unscoped = IntrospectionVerifier(configuration: Self.configuration(server, .bearer(token.accessToken)))
            await #expect(throws: TokenVerificationError.introspectionClientRejected) {
                try await unscoped.verify(token.accessToken)
            }
        }

        /// DOT's own behaviour, recorded: its introspection view admits a *public* client by its `client_id` alone
        /// (no secret), so anyone who knows a public client's ID can introspect any token. Resource servers should
        /// still use a confidential client; this is a property of DOT 3.4.1 a deployment must know.
        @Test func dotAdmitsAPublicClientIDWithoutASecret() async throws {
            let server = try await InteropServer.prepared()
            let token = TestSecrets.shared.register(try await InteropSession(server).signIn())
            let verifier = IntrospectionVerifier(
                configuration: Self.configuration(server, .clientSecretPost(id: Credentials.publicID, secret: "")))
            #expect(try await verifier.verify(token.accessToken).subject == Credentials.username)
        }

        /// RFC 7009 revocation of the access token itself, by the client that owns it (HTTP Basic).
        static func revokeAccessToken(_ server: InteropServer, _ accessToken: String) async throws {
            var request = server.request(.post, "/o/revoke_token/")
            let basic = Data("\(Credentials.confidentialID):\(Credentials.confidentialSecret)".utf8)
                .base64EncodedString()
            request.headerFields[.authorization] = "Basic \(basic)"
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            let form = "token=\(Form.encode(accessToken))&token_type_hint=access_token"
            let (response, _) = try await server.transport.send(request, body: Data(form.utf8))
            guard response.status.code == 200 else {
                throw InteropHarnessError(description: "/o/revoke_token/ answered \(response.status.code)")
            }
        }
    }
}
