import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck

@Suite("Revocation", .logLeakCheck())
struct RevocationTests {
    @Test func revokingARefreshTokenEndsItsSession() async throws {
        try await withServer { server, client in
            let pair = try Pair(try await client.oauthLogin())
            let revoke = try await client.postForm(
                "/oauth/revoke",
                ["token": pair.refreshToken ?? "", "token_type_hint": "refresh_token", "client_id": "demo-app"]
            )
            #expect(revoke.status == 200)

            let refresh = try await client.oauthRefresh(pair.refreshToken)
            #expect(refresh.status == 400)
            #expect(refresh.errorCode == "invalid_grant")
            let resource = try await client.get("/api/v1/progress", bearer: pair.accessToken)
            #expect(resource.status == 401)
            #expect(resource.header("WWW-Authenticate")?.contains("revoked") == true)
            #expect(server.stats.revocations == 1)
        }
    }

    @Test func revokingAnAccessTokenLeavesTheRefreshTokenUsable() async throws {
        try await withServer { _, client in
            let pair = try Pair(try await client.oauthLogin())
            let revoke = try await client.postForm(
                "/oauth/revoke", ["token": pair.accessToken, "client_id": "demo-app"]
            )
            #expect(revoke.status == 200)
            #expect(try await client.get("/api/v1/progress", bearer: pair.accessToken).status == 401)
            #expect(try await client.oauthRefresh(pair.refreshToken).status == 200)
        }
    }

    @Test func unknownTokensAreAnsweredWithSuccessAndCountNothing() async throws {
        try await withServer { _, client in
            let revoke = try await client.postForm(
                "/oauth/revoke", ["token": "unknown-token", "client_id": "demo-app"])
            #expect(revoke.status == 200)
            #expect(try await client.stats().revocations == 0)

            let missing = try await client.postForm("/oauth/revoke", ["client_id": "demo-app"])
            #expect(missing.status == 400)
            #expect(missing.errorCode == "invalid_request")

            let noClient = try await client.postForm("/oauth/revoke", ["token": "unknown-token"])
            #expect(noClient.status == 401)
            #expect(noClient.errorCode == "invalid_client")
        }
    }

    @Test func anotherClientCannotRevokeATokenItWasNotIssued() async throws {
        try await withServer { _, client in
            let pair = try Pair(try await client.oauthLogin())
            let basic = "Basic " + Data("demo-backend:demo-secret".utf8).base64EncodedString()
            let revoke = try await client.postForm(
                "/oauth/revoke", ["token": pair.refreshToken ?? ""], headers: ["Authorization": basic]
            )
            #expect(revoke.status == 200)
            #expect(try await client.oauthRefresh(pair.refreshToken).status == 200)
        }
    }

    @Test func jsonLogoutRevokesTheSession() async throws {
        try await withServer { _, client in
            let pair = try Pair(try await client.jsonLogin())
            let logout = try await client.postJSON("/api/v1/auth/logout", ["refreshToken": pair.refreshToken ?? ""])
            #expect(logout.status == 204)
            #expect(try await client.jsonRefresh(pair.refreshToken).errorCode == "invalid_grant")
        }
    }

    @Test func revokingEverySessionOfAUserSignsThemOutEverywhere() async throws {
        try await withServer { server, client in
            let phone = try Pair(try await client.jsonLogin())
            let tablet = try Pair(try await client.oauthLogin())
            let reply = try await client.send("POST", "/debug/revoke-sessions")
            #expect(try reply.json()["revoked_families"] as? Int == 2)
            #expect(try await client.jsonRefresh(phone.refreshToken).errorCode == "invalid_grant")
            #expect(try await client.oauthRefresh(tablet.refreshToken).errorCode == "invalid_grant")
            #expect(server.revokeAllSessions() == 0)
        }
    }
}
