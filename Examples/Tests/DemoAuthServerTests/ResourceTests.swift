import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck

@Suite("Protected resources", .logLeakCheck())
struct ResourceTests {
    @Test(arguments: ["/api/v1/progress", "/api/v1/sleep", "/api/v1/nutrition"])
    func aFreshTokenIsServed(path: String) async throws {
        try await withServer { _, client in
            let pair = try Pair(try await client.jsonLogin())
            let reply = try await client.get(path, bearer: pair.accessToken)
            #expect(reply.status == 200)
            #expect(try reply.json()["user_id"] as? String == "user-1001")
            #expect(reply.header("WWW-Authenticate") == nil)
        }
    }

    @Test func photoRecognitionAcceptsAnUpload() async throws {
        try await withServer { _, client in
            let pair = try Pair(try await client.jsonLogin())
            let reply = try await client.send(
                "POST", "/api/v1/photo-recognition",
                headers: ["Authorization": "Bearer \(pair.accessToken)", "Content-Type": "image/jpeg"],
                body: Data(repeating: 0xFF, count: 1_000)
            )
            #expect(reply.status == 200)
            let object = try reply.json()
            #expect(object["bytes_received"] as? Int == 1_000)
            #expect((object["items"] as? [Any])?.isEmpty == false)
        }
    }

    @Test func anExpiredTokenGetsAnInvalidTokenChallenge() async throws {
        let clock = TestWallClock()
        try await withServer(.init(accessTokenLifetime: .seconds(30)), clock: clock) { _, client in
            let pair = try Pair(try await client.jsonLogin())
            clock.advance(seconds: 29)
            #expect(try await client.get("/api/v1/sleep", bearer: pair.accessToken).status == 200)

            clock.advance(seconds: 1)
            let reply = try await client.get("/api/v1/sleep", bearer: pair.accessToken)
            #expect(reply.status == 401)
            let challenge = try #require(reply.header("WWW-Authenticate"))
            #expect(challenge.hasPrefix("Bearer "))
            #expect(challenge.contains("error=\"invalid_token\""))
            #expect(challenge.contains("error_description=\"The access token expired\""))
            #expect(reply.errorCode == "invalid_token")

            // A refresh brings a token that is served again.
            let refreshed = try Pair(try await client.jsonRefresh(pair.refreshToken))
            #expect(try await client.get("/api/v1/sleep", bearer: refreshed.accessToken).status == 200)

            let stats = try await client.stats()
            #expect(stats.resourceRequests == 2)
            #expect(stats.rejectedResourceRequests == 1)
        }
    }

    @Test func aRequestWithoutATokenGetsABareChallenge() async throws {
        try await withServer { _, client in
            let reply = try await client.get("/api/v1/progress", bearer: nil)
            #expect(reply.status == 401)
            #expect(reply.header("WWW-Authenticate") == "Bearer realm=\"tokenkit-demo\"")
        }
    }

    @Test func aTamperedTokenGetsAnInvalidTokenChallenge() async throws {
        try await withServer { _, client in
            let pair = try Pair(try await client.jsonLogin())
            var parts = pair.accessToken.split(separator: ".").map(String.init)
            // Same header and signature, another payload: the signature no longer matches.
            let payload = #"{"aud":"tokenkit-demo-api","exp":9999999999,"iat":0,"iss":"x","jti":"j","sub":"admin"}"#
            parts[1] = Data(payload.utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
            for token in [parts.joined(separator: "."), "not-a-jwt", ""] {
                let reply = try await client.get("/api/v1/progress", bearer: token)
                #expect(reply.status == 401)
                #expect(reply.header("WWW-Authenticate")?.contains("error=\"invalid_token\"") == true)
            }
        }
    }

    @Test func aTokenFromAnotherServerIsRefused() async throws {
        let other = try await withServer { _, client in try Pair(try await client.jsonLogin()) }
        try await withServer { _, client in
            let reply = try await client.get("/api/v1/nutrition", bearer: other.accessToken)
            #expect(reply.status == 401)
            #expect(reply.errorCode == "invalid_token")
        }
    }
}
