import DemoAppSupport
import DemoAuthServer
import DietBackend
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Logging
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// The seed's backend contract, run against the diet backend on each framework (Hummingbird and Vapor) with the
/// demo issuer over HTTP, on a manual clock: every test is one contract, and both frameworks must keep it.
@Suite(.logLeakCheck()) struct DietBackendTests {
    typealias Framework = DietBackend.Configuration.Framework

    struct Rig {
        let clock: ManualClock
        let server: DemoAuthServer
        let backend: DietBackend
        let backendURL: URL
        let transport = DemoTransport.urlSession(timeout: 10)

        var issuer: SessionIssuer { server.sessionIssuer }

        func start() -> SessionIssuer.StartedSession {
            let session = issuer.startSession(userID: "user_2diet", email: "diet@example.com")
            TestSecrets.shared.register(session.clientToken, as: .refreshToken)
            return session
        }

        func mint(_ session: SessionIssuer.StartedSession) throws -> String {
            let token = try issuer.sessionToken(sessionID: session.sessionID, clientToken: session.clientToken)
            TestSecrets.shared.register(token, as: .accessToken)
            return token
        }

        func send(_ method: HTTPRequest.Method, _ path: String, bearer: String?) async throws -> (HTTPResponse, String)
        {
            var request = HTTPRequest(method: method, url: backendURL.appendingPathComponent(path))
            if let bearer { request.headerFields[.authorization] = "Bearer \(bearer)" }
            let (response, body) = try await transport.send(request, body: nil)
            return (response, String(decoding: body, as: UTF8.self))
        }
    }

    /// The demo server's issuer and the backend, which finds the JWKS through the issuer's discovery document: over
    /// a key source on the test's clock, or with `ownKeySource` the backend's default one (AsyncHTTPClient, its
    /// own clock).
    func withRig(
        framework: Framework, issuer issuerConfiguration: SessionIssuer.Configuration = .init(),
        algorithms: Set<JWSAlgorithm> = [.rs256], ownKeySource: Bool = false, _ body: (Rig) async throws -> Void
    ) async throws {
        let clock = ManualClock()
        let logger = Logger(label: "diet-backend-tests")
        let server = DemoAuthServer(now: clock.wallClock, logger: logger, issuer: issuerConfiguration)
        let issuerURL = try await server.start()
        let issuer = server.sessionIssuer
        let backend = DietBackend(
            configuration: .init(
                issuer: issuer.issuer, authorizedParties: [issuer.configuration.authorizedParty],
                algorithms: algorithms, framework: framework),
            keySource: ownKeySource
                ? nil : RemoteJWKSSource(location: .openIDDiscovery(issuer: issuerURL), clock: clock, logger: logger),
            now: clock.wallClock, logger: logger, onAccountDeleted: { issuer.deleteUser($0) })
        do {
            let backendURL = try await backend.start()
            try await body(Rig(clock: clock, server: server, backend: backend, backendURL: backendURL))
        } catch {
            await backend.stop()
            await server.stop()
            throw error
        }
        await backend.stop()
        await server.stop()
    }

    @Test(arguments: Framework.allCases) func usersMeAnswersTheVerifiedIdentity(framework: Framework) async throws {
        try await withRig(framework: framework) { rig in
            let session = rig.start()
            let (response, body) = try await rig.send(.get, "users/me", bearer: try rig.mint(session))
            #expect(response.status == .ok)
            #expect(body == #"{"sessionId":"\#(session.sessionID)","userId":"user_2diet"}"#)
        }
    }

    @Test(arguments: Framework.allCases) func keyRotationFailsNoRequestAndCostsAtMostOneFetch(
        framework: Framework
    ) async throws {
        try await withRig(framework: framework) { rig in
            let session = rig.start()
            let beforeRotation = try rig.mint(session)
            #expect(try await rig.send(.get, "users/me", bearer: beforeRotation).0.status == .ok)
            try rig.issuer.rotateKey()
            let afterRotation = try rig.mint(session)
            #expect(try await rig.send(.get, "users/me", bearer: beforeRotation).0.status == .ok)
            #expect(try await rig.send(.get, "users/me", bearer: afterRotation).0.status == .ok)
            #expect(rig.backend.jwksFetches == 1)
            // A second rotation brings a key the cached set has never seen: one refetch after the cooldown.
            rig.clock.advance(by: .seconds(31))
            try rig.issuer.rotateKey()
            let third = try rig.mint(session)
            #expect(try await rig.send(.get, "users/me", bearer: third).0.status == .ok)
            #expect(try await rig.send(.get, "users/me", bearer: afterRotation).0.status == .ok)
            #expect(rig.backend.jwksFetches == 2)
            #expect(rig.backend.stats.rejectedTotal == 0)
        }
    }

    @Test(arguments: Framework.allCases) func missingExpiredAndForeignTokensGet401WithTheSeedsBodies(
        framework: Framework
    ) async throws {
        try await withRig(framework: framework) { rig in
            let session = rig.start()
            let expired = try rig.mint(session)
            let foreignIssuer = SessionIssuer(
                configuration: .init(issuer: "https://clerk.someone-else.test"), now: rig.clock.wallClock)
            let stranger = foreignIssuer.startSession(userID: "user_2diet", email: "diet@example.com")
            TestSecrets.shared.register(stranger.clientToken, as: .refreshToken)
            let foreign = try foreignIssuer.sessionToken(
                sessionID: stranger.sessionID, clientToken: stranger.clientToken)
            TestSecrets.shared.register(foreign, as: .accessToken)
            rig.clock.advance(by: .seconds(70))
            let missing = try await rig.send(.get, "users/me", bearer: nil)
            #expect(missing.0.status == .unauthorized)
            #expect(missing.1 == #"{"error": "Missing authorization header"}"#)
            #expect(missing.0.headerFields[.wwwAuthenticate] == "Bearer")
            #expect(missing.0.headerFields[.contentType] == "application/json")
            for token in [expired, foreign, "not.a.jwt"] {
                let (response, body) = try await rig.send(.get, "users/me", bearer: token)
                #expect(response.status == .unauthorized)
                #expect(body == #"{"error": "Invalid token"}"#)
                #expect(response.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
            }
            let (expiredAnswer, _) = try await rig.send(.get, "users/me", bearer: expired)
            #expect(
                expiredAnswer.headerFields[.wwwAuthenticate]
                    == #"Bearer error="invalid_token", error_description="The token has expired""#)
            #expect(rig.backend.stats.rejected["\(TokenVerificationError.expired)"] == 2)
            #expect(rig.backend.stats.rejected["\(TokenVerificationError.missingAuthorization)"] == 1)
            #expect(rig.backend.stats.authenticated == 0)
        }
    }

    @Test(arguments: Framework.allCases) func deletingTheAccountDeletesTheDataAndEndsTheIssuersSessions(
        framework: Framework
    ) async throws {
        try await withRig(framework: framework) { rig in
            let session = rig.start()
            let token = try rig.mint(session)
            #expect(try await rig.send(.post, "users/me", bearer: token).0.status == .created)
            #expect(try await rig.send(.post, "users/me", bearer: token).0.status == .ok)
            let (deleted, body) = try await rig.send(.delete, "users/me", bearer: token)
            #expect(deleted.status == .ok)
            #expect(body.contains("Account and all data deleted"))
            // The seed's `res.json({ success: true, message: ... })`: a JSON boolean, not the string "true".
            struct Deleted: Decodable {
                let success: Bool
                let message: String
            }
            let answer = try JSONDecoder().decode(Deleted.self, from: Data(body.utf8))
            #expect(answer.success && answer.message == "Account and all data deleted")
            #expect(try await rig.send(.delete, "users/me", bearer: token).0.status == .notFound)
            #expect(rig.backend.stats.accountsDeleted == 1)
            #expect(throws: SessionIssuer.Refusal.userDeleted) {
                try rig.issuer.sessionToken(sessionID: session.sessionID, clientToken: session.clientToken)
            }
        }
    }

    @Test(arguments: Framework.allCases)
    func discoveryAndTheJWKSAreServedWithCacheControlAndTheBackendFindsTheKeysThroughThem(
        framework: Framework
    ) async throws {
        try await withRig(framework: framework) { rig in
            let base = try #require(rig.server.baseURL)
            for path in [".well-known/openid-configuration", "v1/jwks"] {
                let request = HTTPRequest(method: .get, url: base.appendingPathComponent(path))
                let (response, _) = try await rig.transport.send(request, body: nil)
                #expect(response.status == .ok)
                #expect(response.headerFields[.cacheControl] == "public, max-age=300")
            }
            let discovery = HTTPRequest(
                method: .get, url: base.appendingPathComponent(".well-known/openid-configuration"))
            let (_, body) = try await rig.transport.send(discovery, body: nil)
            let document = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            #expect(document["issuer"] as? String == base.absoluteString)
            #expect(document["jwks_uri"] as? String == base.absoluteString + "/v1/jwks")
            #expect(document["id_token_signing_alg_values_supported"] as? [String] == ["RS256"])
            let served = rig.issuer.stats
            let session = rig.start()
            #expect(try await rig.send(.get, "users/me", bearer: try rig.mint(session)).0.status == .ok)
            #expect(try await rig.send(.get, "users/me", bearer: try rig.mint(session)).0.status == .ok)
            #expect(rig.issuer.stats.discoveryServed - served.discoveryServed == 1)
            #expect(rig.issuer.stats.jwksServed - served.jwksServed == 1)
            #expect(rig.backend.jwksFetches == 1)
        }
    }

    @Test(arguments: Framework.allCases) func aRotationMidRunCostsOneRefetchAndOldKeyTokensVerifyUntilTheyExpire(
        framework: Framework
    ) async throws {
        try await withRig(framework: framework, issuer: .init(publishesNextKey: false)) { rig in
            let session = rig.start()
            let oldToken = try rig.mint(session)
            #expect(try await rig.send(.get, "users/me", bearer: oldToken).0.status == .ok)
            #expect(rig.issuer.stats.jwksServed == 1)
            rig.clock.advance(by: .seconds(31))
            try rig.issuer.rotateKey()
            let newToken = try rig.mint(session)
            // The old key's token needs no fetch; the new key's first sight costs exactly one, later ones none.
            #expect(try await rig.send(.get, "users/me", bearer: oldToken).0.status == .ok)
            #expect(rig.issuer.stats.jwksServed == 1)
            for token in [newToken, newToken, oldToken, newToken] {
                #expect(try await rig.send(.get, "users/me", bearer: token).0.status == .ok)
            }
            #expect(rig.issuer.stats.jwksServed == 2)
            rig.clock.advance(by: .seconds(28))
            #expect(try await rig.send(.get, "users/me", bearer: oldToken).0.status == .ok)
            // Past `exp` and the verifier's 5-second leeway.
            rig.clock.advance(by: .seconds(8))
            let (expired, body) = try await rig.send(.get, "users/me", bearer: oldToken)
            #expect(expired.status == .unauthorized)
            #expect(body == #"{"error": "Invalid token"}"#)
            #expect(rig.backend.stats.rejected["\(TokenVerificationError.expired)"] == 1)
            #expect(rig.issuer.stats.jwksServed == 2)
            #expect(rig.issuer.stats.discoveryServed == 1)
            #expect(rig.backend.stats.authenticated == 7)
        }
    }

    @Test(arguments: Framework.allCases)
    func anES256IssuerVerifiesOnABackendThatAllowsES256AndIsRefusedByAnRS256OnlyOne(framework: Framework) async throws {
        try await withRig(framework: framework, issuer: .init(algorithm: .es256), algorithms: [.es256]) { rig in
            let session = rig.start()
            let (response, body) = try await rig.send(.get, "users/me", bearer: try rig.mint(session))
            #expect(response.status == .ok)
            #expect(body == #"{"sessionId":"\#(session.sessionID)","userId":"user_2diet"}"#)
        }
        try await withRig(framework: framework, issuer: .init(algorithm: .es256)) { rig in
            let session = rig.start()
            let (response, body) = try await rig.send(.get, "users/me", bearer: try rig.mint(session))
            #expect(response.status == .unauthorized)
            #expect(body == #"{"error": "Invalid token"}"#)
            #expect(rig.backend.stats.authenticated == 0)
        }
    }

    @Test(arguments: Framework.allCases) func withoutAKeySourceTheBackendFindsTheJWKSThroughTheIssuersDiscovery(
        framework: Framework
    ) async throws {
        let jwks = URL(string: "http://127.0.0.1:1/v1/jwks")!
        let explicit = DietBackend.Configuration(issuer: "https://clerk.example.test", jwksURL: jwks)
        #expect(explicit.keyLocation == .jwks(jwks))
        try await withRig(framework: framework, ownKeySource: true) { rig in
            let issuer = rig.server.sessionIssuer
            #expect(rig.backend.configuration.keyLocation == .openIDDiscovery(issuer: URL(string: issuer.issuer)!))
            let session = rig.start()
            let (response, body) = try await rig.send(.get, "users/me", bearer: try rig.mint(session))
            #expect(response.status == .ok)
            #expect(body == #"{"sessionId":"\#(session.sessionID)","userId":"user_2diet"}"#)
            #expect(issuer.stats.discoveryServed == 1)
            #expect(issuer.stats.jwksServed == 1)
            #expect(rig.backend.jwksFetches == 1)
        }
    }
}
