import AuthToken
import Crypto
import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck

@Suite("Logging in", .logLeakCheck())
struct LoginTests {
    @Test func jsonLoginIssuesAnES256AccessTokenThatTokenKitParses() async throws {
        let clock = TestWallClock()
        try await withServer(.init(accessTokenLifetime: .seconds(5)), clock: clock) { server, client in
            let reply = try await client.jsonLogin()
            #expect(reply.status == 200)
            #expect(reply.header("Cache-Control") == "no-store")
            let object = try reply.json()
            // The analysis's camelCase `TokenResponse`.
            #expect(object["tokenType"] as? String == "Bearer")
            #expect(object["expiresIn"] as? Int == 5)
            #expect(object["userId"] as? String == "user-1001")
            #expect(object["access_token"] == nil)
            let pair = try Pair(reply)
            #expect(pair.refreshToken?.isEmpty == false)

            let jwt = try JWT(parsing: pair.accessToken)
            #expect(jwt.header.algorithm == "ES256")
            #expect(jwt.claims.subject == "user-1001")
            #expect(jwt.claims.issuer == server.configuration.issuer)
            #expect(jwt.claims.audience == [server.configuration.audience])
            #expect(jwt.claims.jwtID?.isEmpty == false)
            let issuedAt = try #require(jwt.claims.issuedAt)
            let expiration = try #require(jwt.claims.expiration)
            #expect(issuedAt == clock.now())
            #expect(expiration.timeIntervalSince(issuedAt) == 5)

            let token = AuthToken.withParsedExpiration(
                accessToken: pair.accessToken, refreshToken: pair.refreshToken, receivedAt: clock.now()
            )
            #expect(token.secondsUntilExpiration(at: clock.now()) == 5)
            #expect(try await client.stats().logins == 1)
        }
    }

    @Test func eachLoginGetsADistinctTokenID() async throws {
        try await withServer { _, client in
            let first = try JWT(parsing: try Pair(try await client.jsonLogin()).accessToken)
            let second = try JWT(parsing: try Pair(try await client.jsonLogin()).accessToken)
            let distinct = first.claims.jwtID != second.claims.jwtID
            #expect(distinct)
        }
    }

    @Test func jsonLoginRefusesAWrongPassword() async throws {
        try await withServer { _, client in
            let reply = try await client.jsonLogin(password: "wrong-password")
            #expect(reply.status == 401)
            #expect(reply.errorCode == "invalid_credentials")
            let stats = try await client.stats()
            #expect(stats.failedLogins == 1)
            #expect(stats.logins == 0)
        }
    }

    @Test func jsonLoginRefusesABodyWithoutCredentials() async throws {
        try await withServer { _, client in
            let reply = try await client.postJSON("/api/v1/auth/login", ["email": "demo@example.com"])
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_request")
        }
    }

    @Test(arguments: [nil, "wrong-key"])
    func jsonEndpointsRequireTheAPIKey(apiKey: String?) async throws {
        try await withServer { _, client in
            let body = ["email": "demo@example.com", "password": "password123"]
            let login = try await client.postJSON("/api/v1/auth/login", body, apiKey: apiKey)
            #expect(login.status == 401)
            #expect(login.errorCode == "invalid_client")
            let refresh = try await client.postJSON(
                "/api/v1/auth/refresh", ["refreshToken": "not-a-refresh-token"], apiKey: apiKey)
            #expect(refresh.status == 401)
            #expect(refresh.errorCode == "invalid_client")
        }
    }

    @Test func passwordGrantLogsInAtTheTokenEndpoint() async throws {
        try await withServer { server, client in
            let reply = try await client.oauthLogin()
            #expect(reply.status == 200)
            #expect(reply.header("Pragma") == "no-cache")
            let pair = try Pair(reply)
            #expect(pair.expiresIn == 900)
            #expect(try JWT(parsing: pair.accessToken).claims.subject == "user-1001")
            #expect(server.stats.logins == 1)
        }
    }

    @Test func passwordGrantRefusesAWrongPasswordWithInvalidGrant() async throws {
        try await withServer { _, client in
            let reply = try await client.postForm(
                "/oauth/token",
                [
                    "grant_type": "password", "username": "demo@example.com", "password": "not-the-password",
                    "client_id": "demo-app",
                ]
            )
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_grant")
        }
    }

    @Test func clientCredentialsGrantServesConfidentialClientsOnly() async throws {
        try await withServer { _, client in
            let basic = "Basic " + Data("demo-backend:demo-secret".utf8).base64EncodedString()
            let granted = try await client.postForm(
                "/oauth/token", ["grant_type": "client_credentials"], headers: ["Authorization": basic]
            )
            #expect(granted.status == 200)
            let pair = try Pair(granted)
            #expect(pair.refreshToken == nil)
            #expect(try JWT(parsing: pair.accessToken).claims.subject == "demo-backend")

            let refused = try await client.postForm(
                "/oauth/token", ["grant_type": "client_credentials", "client_id": "demo-app"]
            )
            #expect(refused.status == 400)
            #expect(refused.errorCode == "unauthorized_client")
        }
    }

    @Test func jwksPublishesTheKeyThatSignsTheTokens() async throws {
        try await withServer { _, client in
            let pair = try Pair(try await client.jsonLogin())
            let jwks = try await client.send("GET", "/.well-known/jwks.json").json()
            let keys = try #require(jwks["keys"] as? [[String: String]])
            let key = try #require(keys.first)
            #expect(key["kty"] == "EC")
            #expect(key["crv"] == "P-256")
            #expect(key["alg"] == "ES256")
            #expect(key["kid"] == (try JWT.header(of: pair.accessToken).keyID))

            let x = try #require(base64URLDecode(key["x"] ?? ""))
            let y = try #require(base64URLDecode(key["y"] ?? ""))
            let publicKey = try P256.Signing.PublicKey(x963Representation: [0x04] + x + y)
            let parts = pair.accessToken.split(separator: ".")
            let signature = try P256.Signing.ECDSASignature(
                rawRepresentation: try #require(base64URLDecode(String(parts[2])))
            )
            #expect(publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
        }
    }
}

/// Base64url without padding to bytes.
func base64URLDecode(_ text: String) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}
