// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import HummingbirdTesting
import Testing
import TokenKitHummingbird
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// The app's own user, logged in by a session cookie or by a Bearer.
struct AppUser: Sendable, Equatable {
    let name: String
    let via: String
}

/// A session-cookie authenticator, as an app with a web front end has one: `Cookie: session=<name>`.
func cookieAuthenticator() -> ClosureAuthenticator<BasicAuthRequestContext<AppUser>> {
    ClosureAuthenticator { request, _ in
        guard let cookie = request.headers[.cookie], cookie.hasPrefix("session=") else { return nil }
        return AppUser(name: String(cookie.dropFirst("session=".count)), via: "cookie")
    }
}

@Suite(.logLeakCheck()) struct BearerTokenAuthenticatorTests {
    static func verifier(source: any JWKSSource = StaticJWKSSource(Issuer.keySet)) -> TokenVerifier {
        TokenVerifier(
            configuration: .init(
                issuer: Issuer.url, audience: .notChecked(reason: "Clerk session tokens carry no aud")),
            keySource: source)
    }

    /// Bearer first, then the session cookie, then the chain end: the order an app that accepts both writes.
    static func application(source: any JWKSSource = StaticJWKSSource(Issuer.keySet)) -> some ApplicationProtocol {
        let router = Router(context: BasicAuthRequestContext<AppUser>.self)
        router.group("api")
            .add(
                middleware: BearerTokenAuthenticator(verifier: verifier(source: source)) { identity, _, _ in
                    AppUser(name: identity.userId, via: "bearer")
                }
            )
            .add(middleware: cookieAuthenticator())
            .add(middleware: BearerChallengeMiddleware())
            .get("me") { _, context in
                let user = try context.requireIdentity()
                return "\(user.via):\(user.name)"
            }
        return Application(router: router)
    }

    static func get(
        authorization: String? = nil, cookie: String? = nil, source: any JWKSSource = StaticJWKSSource(Issuer.keySet)
    ) async throws -> TestResponse {
        var fields = HTTPFields()
        if let authorization { fields[.authorization] = authorization }
        if let cookie { fields[.cookie] = cookie }
        let headers = fields
        return try await application(source: source).test(.router) { client in
            try await client.execute(uri: "/api/me", method: .get, headers: headers)
        }
    }

    @Test func aValidBearerLogsTheAppsOwnUserIn() async throws {
        let response = try await Self.get(authorization: "Bearer \(Issuer.token())")
        #expect(response.status == .ok)
        #expect(String(buffer: response.body) == "bearer:user_2hbABCDEF")
    }

    @Test func aSessionCookieAloneLogsInWithoutAnyBearer() async throws {
        let response = try await Self.get(cookie: "session=alice")
        #expect(response.status == .ok)
        #expect(String(buffer: response.body) == "cookie:alice")
    }

    @Test func aRefusedBearerLeavesTheDecisionToTheNextAuthenticator() async throws {
        let expired = Issuer.token(exp: Int(Date().timeIntervalSince1970) - 3600)
        let response = try await Self.get(authorization: "Bearer \(expired)", cookie: "session=alice")
        #expect(response.status == .ok)
        #expect(String(buffer: response.body) == "cookie:alice")
    }

    @Test func noCredentialAtAllIsTheSeedsMissingHeader401() async throws {
        let response = try await Self.get()
        #expect(response.status == .unauthorized)
        #expect(String(buffer: response.body) == #"{"error": "Missing authorization header"}"#)
        #expect(response.headers[.wwwAuthenticate] == "Bearer")
    }

    @Test func theChainEndAnswersARefusedBearerWithItsReason() async throws {
        let expired = Issuer.token(exp: Int(Date().timeIntervalSince1970) - 3600)
        let response = try await Self.get(authorization: "Bearer \(expired)")
        #expect(response.status == .unauthorized)
        #expect(String(buffer: response.body) == #"{"error": "Invalid token"}"#)
        #expect(
            response.headers[.wwwAuthenticate]
                == #"Bearer error="invalid_token", error_description="The token has expired""#)
    }

    @Test func aForgedBearerIsAnInvalidToken401() async throws {
        let response = try await Self.get(authorization: "Bearer \(Issuer.token(signedBy: Issuer.otherKey))")
        #expect(response.status == .unauthorized)
        #expect(String(buffer: response.body) == #"{"error": "Invalid token"}"#)
        #expect(response.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
    }

    @Test func noUsableKeySetIsA503AtTheChainEnd() async throws {
        let response = try await Self.get(authorization: "Bearer \(Issuer.token())", source: UnavailableSource())
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers[.wwwAuthenticate] == nil)
    }

    @Test func anUnavailableKeySetStillLetsACookieUserIn() async throws {
        let response = try await Self.get(
            authorization: "Bearer \(Issuer.token())", cookie: "session=alice", source: UnavailableSource())
        #expect(response.status == .ok)
        #expect(String(buffer: response.body) == "cookie:alice")
    }

    @Test func theBearerIdentityContextWorksWithHummingbirdAuthsOwnChainEnd() async throws {
        let router = Router(context: BasicBearerAuthRequestContext.self)
        router.add(middleware: BearerTokenAuthenticator(verifier: Self.verifier()))
            .add(middleware: IsAuthenticatedMiddleware())
            .get("me") { _, context in try context.requireIdentity().userId }
        let token = Issuer.token()
        try await Application(router: router).test(.router) { client in
            let ok = try await client.execute(
                uri: "/me", method: .get, headers: [.authorization: "Bearer \(token)"])
            #expect(String(buffer: ok.body) == "user_2hbABCDEF")
            let refused = try await client.execute(uri: "/me", method: .get)
            #expect(refused.status == .unauthorized)
        }
    }
}
#endif
