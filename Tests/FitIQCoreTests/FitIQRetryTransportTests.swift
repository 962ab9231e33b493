import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The FitIQ retry sends the refreshed token only where any TokenKit request would: over https, or plain http to a
/// loopback host.
@Suite(.logLeakCheck()) struct FitIQRetryTransportTests {
    static func request(_ url: String, _ persistence: KeychainAuthTokenAdapter) throws -> URLRequest {
        var request = URLRequest(url: try #require(URL(string: url)))
        if let accessToken = try persistence.fetchAccessToken() {
            request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        }
        return request
    }

    @Test func theRefreshedTokenIsNeverSentOverPlainHTTPToAHostThatIsNotLoopback() async throws {
        let (backend, persistence, dependencies, clock) = try FitIQCallSiteTests.app()
        clock.advance(by: .seconds(1000))  // the access token has expired: the request gets a 401
        let request = try Self.request("http://api.fitiq.example/api/v1/progress", persistence)
        let before = try persistence.fetchRefreshToken()
        await #expect(throws: NetworkRetryError.insecureTransport) {
            try await dependencies.networkClient.executeWithAutoRetry(
                request: request, tokenRefreshClient: dependencies.tokenRefreshClient,
                authTokenPersistence: dependencies.authTokenPersistence)
        }
        #expect(backend.snapshot.resourceRequests == 1, "only the app's own request; no retry")
        #expect(backend.snapshot.refreshes == 0, "nothing to send the new token with: no refresh")
        #expect(try persistence.fetchRefreshToken() == before)
    }

    @Test(arguments: [
        "http://127.0.0.1/api/v1/progress", "http://localhost:8080/api/v1/progress", "http://[::1]/api/v1/progress",
    ])
    func aLoopbackHostOverPlainHTTPGetsTheRetry(url: String) async throws {
        let (backend, persistence, dependencies, clock) = try FitIQCallSiteTests.app()
        clock.advance(by: .seconds(1000))
        let (_, response) = try await dependencies.networkClient.executeWithAutoRetry(
            request: try Self.request(url, persistence), tokenRefreshClient: dependencies.tokenRefreshClient,
            authTokenPersistence: dependencies.authTokenPersistence)
        #expect(response.statusCode == 200)
        #expect(backend.snapshot.refreshes == 1)
    }
}
