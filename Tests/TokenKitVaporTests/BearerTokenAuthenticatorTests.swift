// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Foundation
    import Testing
    import TokenKitLogCheck
    import TokenKitVapor
    import TokenVerification
    import Vapor
    import VaporTesting

    /// The app's own user, logged in by a session cookie (`Cookie: session=<name>`) or mapped from a Bearer identity.
    struct AppUser: Authenticatable, Equatable {
        let name: String
        let via: String
    }

    /// A session-cookie authenticator, as an app with a web front end has one.
    struct CookieAuthenticator: AsyncRequestAuthenticator {
        func authenticate(request: Request) async throws {
            guard let cookie = request.headers.first(name: .cookie), cookie.hasPrefix("session=") else { return }
            request.auth.login(AppUser(name: String(cookie.dropFirst("session=".count)), via: "cookie"))
        }
    }

    /// Maps a verified Bearer identity to the app's user, as a Vapor app chains its authenticators.
    struct BearerUserAuthenticator: AsyncRequestAuthenticator {
        func authenticate(request: Request) async throws {
            guard let identity = request.auth.get(BearerIdentity.self) else { return }
            request.auth.login(AppUser(name: identity.userId, via: "bearer"))
        }
    }

    @Suite(.logLeakCheck()) struct BearerTokenAuthenticatorTests {
        /// Bearer first, then the session cookie, then the chain end: the order an app that accepts both writes.
        static func withChainedApp(
            source: any JWKSSource = StaticJWKSSource(Issuer.keySet), _ body: (Application) async throws -> Void
        ) async throws {
            try await withApp(
                configure: { app in
                    app.grouped(BearerTokenAuthenticator(verifier: verifier(source: source)))
                        .grouped(BearerUserAuthenticator(), CookieAuthenticator())
                        .grouped(BearerChallengeMiddleware(AppUser.self))
                        .get("me") { req in
                            let user = try req.auth.require(AppUser.self)
                            return "\(user.via):\(user.name)"
                        }
                }, body)
        }

        static func me(
            _ app: Application, authorization: String? = nil, cookie: String? = nil
        ) async throws -> TestingHTTPResponse {
            var headers = HTTPHeaders()
            if let authorization { headers.add(name: .authorization, value: authorization) }
            if let cookie { headers.add(name: .cookie, value: cookie) }
            return try await app.testing().sendRequest(.GET, "me", headers: headers)
        }

        @Test func aValidBearerLogsTheAppsOwnUserIn() async throws {
            try await Self.withChainedApp { app in
                let response = try await Self.me(app, authorization: "Bearer \(Issuer.token())")
                #expect(response.status == .ok)
                #expect(response.body.string == "bearer:user_2vpABCDEF")
            }
        }

        @Test func aRefusedBearerLeavesTheDecisionToTheNextAuthenticator() async throws {
            try await Self.withChainedApp { app in
                let response = try await Self.me(
                    app, authorization: "Bearer \(Issuer.expiredToken())", cookie: "session=alice")
                #expect(response.status == .ok)
                #expect(response.body.string == "cookie:alice")
            }
        }

        @Test func noCredentialAtAllIsTheSeedsMissingHeader401() async throws {
            try await Self.withChainedApp { app in
                let response = try await Self.me(app)
                #expect(response.status == .unauthorized)
                #expect(response.body.string == #"{"error": "Missing authorization header"}"#)
                #expect(response.headers.first(name: .wwwAuthenticate) == "Bearer")
            }
        }

        @Test func theChainEndAnswersARefusedBearerWithItsReason() async throws {
            try await Self.withChainedApp { app in
                expectExpiredTokenChallenge(try await Self.me(app, authorization: "Bearer \(Issuer.expiredToken())"))
            }
        }

        @Test func noUsableKeySetIsA503AtTheChainEndButACookieUserStillGetsIn() async throws {
            try await Self.withChainedApp(source: UnavailableSource()) { app in
                let bearerOnly = try await Self.me(app, authorization: "Bearer \(Issuer.token())")
                #expect(bearerOnly.status == .serviceUnavailable)
                let withCookie = try await Self.me(
                    app, authorization: "Bearer \(Issuer.token())", cookie: "session=alice")
                #expect(withCookie.body.string == "cookie:alice")
            }
        }
    }
#endif
