import AuthToken
import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck

@Suite("Refreshing and rotation", .logLeakCheck())
struct RefreshTests {
    @Test func jsonRefreshRotatesAndRefusesTheOldTokenAfterwards() async throws {
        let clock = TestWallClock()
        try await withServer(clock: clock) { server, client in
            let login = try Pair(try await client.jsonLogin())
            clock.advance(seconds: 60)
            let reply = try await client.jsonRefresh(login.refreshToken)
            #expect(reply.status == 200)
            let object = try reply.json()
            #expect(object["tokenType"] as? String == "Bearer")
            #expect(object["expiresIn"] as? Int == 900)
            let refreshed = try Pair(reply)
            let rotated = refreshed.refreshToken != nil && refreshed.refreshToken != login.refreshToken
            #expect(rotated)
            let issuedAt = try JWT(parsing: refreshed.accessToken).claims.issuedAt
            #expect(issuedAt == clock.now())

            let reused = try await client.jsonRefresh(login.refreshToken)
            #expect(reused.status == 401)
            #expect(reused.errorCode == "invalid_grant")
            #expect(server.stats.refreshes == 1)
        }
    }

    @Test func theIssueLogRecordsEachAccessTokenWithoutItsText() async throws {
        let clock = TestWallClock()
        try await withServer(clock: clock) { server, client in
            let login = try Pair(try await client.jsonLogin())
            clock.advance(seconds: 901)
            _ = try await client.jsonRefresh(login.refreshToken)
            let reply = try await client.send("GET", "/debug/issued")
            let log = try JSONDecoder().decode([DemoAuthServer.IssueRecord].self, from: reply.body)
            #expect(log == server.issueLog)
            #expect(log.map(\.grant) == [.login, .refresh])
            #expect(Set(log.map(\.family)).count == 1)
            #expect(log[1].issuedAt == log[0].issuedAt + 901)
            #expect(log[0].expiresAt == Int(log[0].issuedAt.rounded(.down)) + 900)
            let text = String(decoding: reply.body, as: UTF8.self)
            #expect(!text.contains(login.accessToken) && !text.contains(login.refreshToken ?? "-"))
        }
    }

    @Test func jsonRefreshReadsTheAnalysisBodyAndASnakeCaseOne() async throws {
        try await withServer { server, client in
            let login = try Pair(try await client.jsonLogin())
            let camel = try await client.postJSON("/api/v1/auth/refresh", ["refreshToken": login.refreshToken ?? ""])
            #expect(camel.status == 200)
            let rotated = try Pair(camel)
            let snake = try await client.postJSON(
                "/api/v1/auth/refresh", ["refresh_token": rotated.refreshToken ?? ""])
            #expect(snake.status == 200)
            #expect(server.stats.refreshes == 2)
        }
    }

    @Test func reusingARotatedTokenRevokesTheWholeFamily() async throws {
        try await withServer { server, client in
            let login = try Pair(try await client.oauthLogin())
            let first = try Pair(try await client.oauthRefresh(login.refreshToken))
            let second = try Pair(try await client.oauthRefresh(first.refreshToken))

            // The login's token was retired two rotations ago: presenting it is reuse.
            let reuse = try await client.oauthRefresh(login.refreshToken)
            #expect(reuse.status == 400)
            #expect(reuse.errorCode == "invalid_grant")

            // The newest token of the family is dead too, and so is its access token.
            let newest = try await client.oauthRefresh(second.refreshToken)
            #expect(newest.status == 400)
            #expect(newest.errorCode == "invalid_grant")
            let resource = try await client.get("/api/v1/progress", bearer: second.accessToken)
            #expect(resource.status == 401)

            let stats = try await client.stats()
            #expect(stats.refreshes == 2)
            #expect(stats.reuseDetections == 1)
            #expect(stats.rejectedRefreshes == 2)
            #expect(server.stats == stats)

            // Another login is a new family and unaffected.
            let fresh = try Pair(try await client.oauthLogin())
            #expect(try await client.oauthRefresh(fresh.refreshToken).status == 200)
        }
    }

    @Test func withoutReuseDetectionARetiredTokenIsRefusedButTheFamilyLives() async throws {
        try await withServer(.init(reuseDetection: false)) { _, client in
            let login = try Pair(try await client.jsonLogin())
            let refreshed = try Pair(try await client.jsonRefresh(login.refreshToken))
            let reuse = try await client.jsonRefresh(login.refreshToken)
            #expect(reuse.status == 401)
            #expect(reuse.errorCode == "invalid_grant")
            #expect(try await client.jsonRefresh(refreshed.refreshToken).status == 200)
        }
    }

    @Test func withinTheGraceWindowARotatedTokenReturnsTheSamePair() async throws {
        let clock = TestWallClock()
        try await withServer(.init(graceWindow: .seconds(10)), clock: clock) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let refreshed = try Pair(try await client.jsonRefresh(login.refreshToken))

            clock.advance(seconds: 10)
            let again = try Pair(try await client.jsonRefresh(login.refreshToken))
            let samePair = again == refreshed
            #expect(samePair)
            #expect(server.stats.graceReuses == 1)
            #expect(server.stats.refreshes == 1)

            clock.advance(seconds: 1)
            let late = try await client.jsonRefresh(login.refreshToken)
            #expect(late.status == 401)
            #expect(late.errorCode == "invalid_grant")
            #expect(try await client.jsonRefresh(refreshed.refreshToken).status == 401)
            #expect(server.stats.reuseDetections == 1)
        }
    }

    @Test func concurrentRefreshesOfOneTokenRotateOnceAndShareThePair() async throws {
        try await withServer(.init(graceWindow: .seconds(60))) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let pairs = try await withThrowingTaskGroup(of: Pair.self) { group in
                for _ in 0..<20 {
                    group.addTask { try Pair(try await client.jsonRefresh(login.refreshToken)) }
                }
                return try await group.reduce(into: [Pair]()) { $0.append($1) }
            }
            #expect(pairs.count == 20)
            let distinctAccessTokens = Set(pairs.map(\.accessToken)).count
            #expect(distinctAccessTokens == 1)
            #expect(server.stats.refreshes == 1)
            #expect(server.stats.graceReuses == 19)
            #expect(server.stats.reuseDetections == 0)
        }
    }

    @Test func concurrentRefreshesWithoutGraceRotateOnceAndRevokeTheFamily() async throws {
        try await withServer { server, client in
            let login = try Pair(try await client.jsonLogin())
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await client.jsonRefresh(login.refreshToken).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 401 }.count == 9)
            #expect(server.stats.refreshes == 1)
            // The first late request is the reuse that revokes the family; the rest find it revoked.
            #expect(server.stats.reuseDetections == 1)
            #expect(server.stats.rejectedRefreshes == 9)
        }
    }

    @Test func withoutRotationTheRefreshTokenStaysAndIsNotResent() async throws {
        try await withServer(.init(rotateRefreshTokens: false)) { _, client in
            let login = try Pair(try await client.oauthLogin())
            let first = try Pair(try await client.oauthRefresh(login.refreshToken))
            #expect(first.refreshToken == nil)
            let second = try await client.oauthRefresh(login.refreshToken)
            #expect(second.status == 200)
            #expect(try await client.stats().refreshes == 2)
        }
    }

    @Test func anExpiredRefreshTokenIsRefused() async throws {
        let clock = TestWallClock()
        try await withServer(.init(refreshTokenLifetime: .seconds(3600)), clock: clock) { _, client in
            let login = try Pair(try await client.oauthLogin())
            clock.advance(seconds: 3600)
            let reply = try await client.oauthRefresh(login.refreshToken)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_grant")
        }
    }

    @Test func aRefreshTokenIsBoundToItsClient() async throws {
        try await withServer { _, client in
            let oauth = try Pair(try await client.oauthLogin())
            let viaJSON = try await client.jsonRefresh(oauth.refreshToken)
            #expect(viaJSON.status == 401)
            #expect(viaJSON.errorCode == "invalid_grant")

            let basic = "Basic " + Data("demo-backend:demo-secret".utf8).base64EncodedString()
            let otherClient = try await client.postForm(
                "/oauth/token", ["grant_type": "refresh_token", "refresh_token": oauth.refreshToken ?? ""],
                headers: ["Authorization": basic]
            )
            #expect(otherClient.status == 400)
            #expect(otherClient.errorCode == "invalid_grant")
            // Refused presentations by another client are not reuse: the family lives.
            #expect(try await client.oauthRefresh(oauth.refreshToken).status == 200)
        }
    }

    @Test func tokenEndpointAnswersRFC6749Errors() async throws {
        try await withServer { _, client in
            let unsupported = try await client.postForm(
                "/oauth/token", ["grant_type": "implicit", "client_id": "demo-app"]
            )
            #expect(unsupported.status == 400)
            #expect(unsupported.errorCode == "unsupported_grant_type")

            let missingToken = try await client.postForm(
                "/oauth/token", ["grant_type": "refresh_token", "client_id": "demo-app"]
            )
            #expect(missingToken.status == 400)
            #expect(missingToken.errorCode == "invalid_request")

            let missingGrant = try await client.postForm("/oauth/token", ["client_id": "demo-app"])
            #expect(missingGrant.errorCode == "invalid_request")

            let unknownClient = try await client.oauthRefresh("not-a-refresh-token", clientID: "nobody")
            #expect(unknownClient.status == 401)
            #expect(unknownClient.errorCode == "invalid_client")

            let noClient = try await client.postForm("/oauth/token", ["grant_type": "refresh_token"])
            #expect(noClient.status == 401)
            #expect(noClient.errorCode == "invalid_client")

            let wrongSecret = "Basic " + Data("demo-backend:wrong-secret".utf8).base64EncodedString()
            let badBasic = try await client.postForm(
                "/oauth/token", ["grant_type": "client_credentials"], headers: ["Authorization": wrongSecret]
            )
            // RFC 6749 section 5.2: a client that authenticated with the Authorization header gets a 401 with a
            // challenge (URLSession on Linux drops that body: see ChallengeRecorder).
            #expect(badBasic.status == 401)
            #expect(badBasic.header("WWW-Authenticate") == "Basic realm=\"tokenkit-demo\"")

            let json = try await client.send(
                "POST", "/oauth/token", headers: ["Content-Type": "application/json"], body: Data("{}".utf8)
            )
            #expect(json.status == 400)
            #expect(json.errorCode == "invalid_request")

            let repeated = try await client.send(
                "POST", "/oauth/token", headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data("grant_type=password&grant_type=refresh_token&client_id=demo-app".utf8)
            )
            #expect(repeated.errorCode == "invalid_request")

            let unknownToken = try await client.oauthRefresh("not-a-token")
            #expect(unknownToken.status == 400)
            #expect(unknownToken.errorCode == "invalid_grant")
        }
    }

    @Test func statsCountRefreshAttemptsAndOutcomes() async throws {
        try await withServer { _, client in
            let login = try Pair(try await client.jsonLogin())
            _ = try await client.jsonRefresh(login.refreshToken)
            _ = try await client.jsonRefresh("unknown-refresh-token")
            let stats = try await client.stats()
            #expect(stats.logins == 1)
            #expect(stats.refreshAttempts == 2)
            #expect(stats.refreshes == 1)
            #expect(stats.rejectedRefreshes == 1)
            #expect(stats.reuseDetections == 0)
        }
    }
}
