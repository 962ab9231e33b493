import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct ConcurrentRefreshTests {
    @Test func twoHundredConcurrent401sWithTheSameExpiredTokenCauseExactlyOneRefresh() async throws {
        let count = 200
        let provider = FakeTokenProvider(
            current: "expired-bearer-x1", refreshedTokens: ["fresh-bearer-x2", "fresher-bearer-x3"])
        let barrier = HoldGate(openingAt: count)
        // Every request with the expired token waits until all have been sent with it, then gets a 401; so all
        // 200 are rejected before anyone refreshes.
        let transport = MockTransport { request, _ in
            if request.headerFields[.authorization] == "Bearer expired-bearer-x1" {
                await barrier.wait()
                return (
                    HTTPResponse(
                        status: .unauthorized, headerFields: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
                    Data()
                )
            }
            return (HTTPResponse(status: .ok), Data((request.path ?? "").utf8))
        }
        let client = AuthenticatedClient(transport: transport, tokenProvider: provider, configuration: .api)

        let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
            for index in 0..<count {
                group.addTask {
                    let (response, body) = try await client.executeWithAutoRetry(.api(.get, "/v1/items/\(index)"))
                    #expect(response.status == .ok)
                    return body
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(bodies.count == count)
        #expect(Set(bodies).count == count)
        #expect(await provider.refreshCount == 1)
        #expect(await provider.rejectedTokens.count == count)
        let requests = transport.requests
        #expect(requests.count == 2 * count)
        var attempts: [String: [String?]] = [:]
        for request in requests { attempts[request.path ?? "", default: []].append(request.bearerToken) }
        #expect(attempts.count == count)
        #expect(
            attempts.values.allSatisfy { $0 == ["expired-bearer-x1", "fresh-bearer-x2"] },
            "every request is retried once, none twice")
    }
}
