import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Fault injection", .logLeakCheck())
struct FaultTests {
    @Test func serverErrorsComeBeforeRotationAndCountDown() async throws {
        try await withServer(.init(faults: .init(failNextRefreshes: 2))) { server, client in
            let login = try Pair(try await client.jsonLogin())
            for _ in 0..<2 {
                let failed = try await client.jsonRefresh(login.refreshToken)
                #expect(failed.status == 500)
                #expect(failed.errorCode == "server_error")
            }
            // Nothing was rotated: the same token works now.
            #expect(try await client.jsonRefresh(login.refreshToken).status == 200)
            #expect(server.stats.faultsInjected == 2)
            #expect(server.stats.refreshes == 1)
            #expect(server.faults == DemoAuthServer.Faults())
        }
    }

    @Test func unavailableAnswers503WithRetryAfter() async throws {
        try await withServer { server, client in
            server.setFaults(.init(unavailableNextRefreshes: 1, retryAfterSeconds: 3))
            let login = try Pair(try await client.oauthLogin())
            let reply = try await client.oauthRefresh(login.refreshToken)
            #expect(reply.status == 503)
            #expect(reply.header("Retry-After") == "3")
            #expect(reply.errorCode == "temporarily_unavailable")
            #expect(try await client.oauthRefresh(login.refreshToken).status == 200)
        }
    }

    @Test func aStalledRefreshRotatesNothingAndEndsWith503AtItsLimit() async throws {
        // A limit of 0 s: the held refresh is answered at once (a client killed while held: the replica test).
        try await withServer(.init(faults: .init(stallNextRefreshes: 1, stallLimitSeconds: 0))) { server, client in
            let login = try Pair(try await client.jsonLogin())
            let stalled = try await client.jsonRefresh(login.refreshToken)
            #expect(stalled.status == 503)
            #expect(stalled.errorCode == "temporarily_unavailable")
            #expect(server.stats.faultsInjected == 1)
            #expect(server.stats.refreshes == 0)
            // Nothing was rotated: the same token works now, and the fault is used up.
            #expect(try await client.jsonRefresh(login.refreshToken).status == 200)
            #expect(server.faults.stallNextRefreshes == 0)
        }
    }

    @Test func htmlAndMalformedJSONAreAnsweredWith200() async throws {
        try await withServer(.init(faults: .init(htmlNextRefreshes: 1, malformedJSONNextRefreshes: 1))) { _, client in
            let login = try Pair(try await client.jsonLogin())
            let html = try await client.jsonRefresh(login.refreshToken)
            #expect(html.status == 200)
            #expect(html.header("Content-Type")?.hasPrefix("text/html") == true)
            let malformed = try await client.jsonRefresh(login.refreshToken)
            #expect(malformed.status == 200)
            #expect(malformed.header("Content-Type") == "application/json")
            #expect(throws: (any Error).self) { try JSONSerialization.jsonObject(with: malformed.body) }
            #expect(try await client.jsonRefresh(login.refreshToken).status == 200)
        }
    }

    @Test func aResponseDroppedAfterRotationLeavesTheClientWithARetiredToken() async throws {
        let configuration = DemoAuthServer.Configuration(
            graceWindow: .seconds(30), faults: .init(dropResponseAfterRotationNextRefreshes: 1)
        )
        try await withServer(configuration) { server, client in
            let login = try Pair(try await client.jsonLogin())
            // A fresh session, so the request goes over a new connection that nothing retries.
            let oneShot = TestClient(baseURL: client.baseURL)
            defer { oneShot.close() }
            await #expect(throws: (any Error).self) { try await oneShot.jsonRefresh(login.refreshToken) }
            #expect(server.stats.refreshes == 1)

            // Within the grace window the retired token recovers the pair the client never saw.
            let recovered = try await client.jsonRefresh(login.refreshToken)
            #expect(recovered.status == 200)
            #expect(server.stats.graceReuses == 1)
        }
    }

    @Test func aServerErrorAfterRotationWithoutGraceEndsTheSession() async throws {
        try await withServer(.init(faults: .init(failAfterRotationNextRefreshes: 1))) { server, client in
            let login = try Pair(try await client.oauthLogin())
            let failed = try await client.oauthRefresh(login.refreshToken)
            #expect(failed.status == 500)
            let retry = try await client.oauthRefresh(login.refreshToken)
            #expect(retry.errorCode == "invalid_grant")
            #expect(server.stats.reuseDetections == 1)
        }
    }

    @Test func theDebugEndpointSetsAndReportsTheFaultPlan() async throws {
        try await withServer { server, client in
            let set = try await client.send(
                "POST", "/debug/faults", headers: ["Content-Type": "application/json"],
                body: Data(#"{"unavailable_next_refreshes": 2, "retry_after_seconds": 7}"#.utf8)
            )
            #expect(set.status == 200)
            #expect(server.faults == DemoAuthServer.Faults(unavailableNextRefreshes: 2, retryAfterSeconds: 7))
            let reported = try await client.send("GET", "/debug/faults").json()
            #expect(reported["unavailable_next_refreshes"] as? Int == 2)

            let bad = try await client.send("POST", "/debug/faults", body: Data(#"{"fail_next_refreshes": "x"}"#.utf8))
            #expect(bad.status == 400)

            let cleared = try await client.send("POST", "/debug/faults")
            #expect(cleared.status == 200)
            #expect(server.faults == DemoAuthServer.Faults())
        }
    }

    @Test func htmlEverywhereSparesOnlyTheDebugEndpoints() async throws {
        try await withServer(.init(faults: .init(htmlEverywhere: true))) { server, client in
            let login = try await client.jsonLogin()
            #expect(login.status == 200)
            #expect(login.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(try await client.stats().faultsInjected == 1)
            server.setFaults(.init())
            #expect(try await client.jsonLogin().status == 200)
            #expect(try await client.stats().logins == 1)
        }
    }
}
