import Foundation
import HTTPTypes
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.logLeakCheck()) struct NetworkClientAdapterTests {
    @Test func anHTTPTransportServesAsTheAppsNetworkClient() async throws {
        let transport = MockTransport(script: [
            .response(status: .ok, headers: [.contentType: "application/json"], body: Data(#"{"ok":true}"#.utf8)),
            .response(status: .unauthorized),
            .response(status: .internalServerError),
        ])
        let client = HTTPTransportNetworkClient(transport: transport)
        var request = URLRequest(url: URL(string: "https://api.fitiq.example:8443/api/v1/sleep?day=1")!)
        request.httpMethod = "POST"
        request.httpBody = Data("adapter-body".utf8)
        request.setValue("Bearer adapter-access-token", forHTTPHeaderField: "Authorization")

        let (data, response) = try await client.executeRequest(request: request)
        #expect(data == Data(#"{"ok":true}"#.utf8))
        #expect(response.statusCode == 200)
        let sent = try #require(transport.requests.first)
        #expect(sent.method == .post && sent.authority == "api.fitiq.example:8443")
        #expect(sent.path == "/api/v1/sleep?day=1")
        #expect(sent.bearerToken == "adapter-access-token" && sent.body == Data("adapter-body".utf8))

        await #expect(throws: APIError.unauthorized) { try await client.executeRequest(request: request) }
        let (_, failed) = try await client.executeRequest(request: request)
        #expect(failed.statusCode == 500, "other statuses are the app's business")
    }

    @Test func theAppsNetworkClientCarriesTheRefreshRequest() async throws {
        let transport = MockTransport(script: [
            .response(
                status: .ok, body: Data(#"{"accessToken":"adapter-new-access","refreshToken":"adapter-new-r"}"#.utf8)),
            .response(status: .unauthorized),
        ])
        let strategy = JSONEndpointRefreshStrategy(
            baseURL: URL(string: "https://api.fitiq.example")!, apiKey: "adapter-api-key-1",
            transport: NetworkClientTransport(HTTPTransportNetworkClient(transport: transport)))
        let response = try await strategy.refresh(using: "adapter-old-refresh")
        #expect(response.accessToken == "adapter-new-access" && response.refreshToken == "adapter-new-r")
        let sent = try #require(transport.requests.first)
        #expect(sent.headerFields[HTTPField.Name("X-API-Key")!] == "adapter-api-key-1")
        #expect(
            try JSONDecoder().decode([String: String].self, from: sent.body ?? Data()) == [
                "refreshToken": "adapter-old-refresh"
            ])
        // The network client's APIError.unauthorized reaches the strategy as a 401: the refresh token is rejected.
        await #expect(throws: TokenRefreshError.refreshTokenRejected) {
            try await strategy.refresh(using: "adapter-old-refresh")
        }
    }
}
