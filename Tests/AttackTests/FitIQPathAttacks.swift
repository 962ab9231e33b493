import Foundation
import HTTPTypes
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A FitIQ app sends its bearer token through `HTTPTransportNetworkClient`. An attacker who controls one path
/// segment (a file name, a note ID) writes escapes that, decoded on the way to the transport, would aim the
/// user's token at another resource, or add a query parameter.
@Suite(.logLeakCheck()) struct FitIQPathAttacks {
    static let attacks: [(url: String, sentPath: String)] = [
        // An encoded `../` climbing out of the files collection into the admin API.
        (
            "https://api.fitiq.example/api/v1/files/..%2F..%2Fadmin%2Fusers",
            "/api/v1/files/..%2F..%2Fadmin%2Fusers"
        ),
        // An encoded `?` turning the rest of a segment into a query parameter.
        ("https://api.fitiq.example/api/v1/notes/a%3Fadmin=true", "/api/v1/notes/a%3Fadmin=true"),
        // An encoded `#`, which would cut the path short.
        ("https://api.fitiq.example/api/v1/notes/a%23b/?page=1", "/api/v1/notes/a%23b/?page=1"),
    ]

    @Test(arguments: zip(attacks.map(\.url), attacks.map(\.sentPath)))
    func anEscapedPathSegmentIsNeverDecodedIntoAnotherResourceThatReceivesTheUsersToken(
        url text: String, sentPath: String
    ) async throws {
        let accessToken = "fitiq-path-attack-access-token"
        TestSecrets.shared.register(accessToken, as: .accessToken)
        let transport = MockTransport(script: [.response(status: .ok)])
        let client = HTTPTransportNetworkClient(transport: transport)
        var request = URLRequest(url: try #require(URL(string: text)))
        request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        _ = try await client.executeRequest(request: request)

        let sent = try #require(transport.requests.first)
        #expect(sent.path == sentPath, "the path reaches the server as the app wrote it")
        #expect(sent.authority == "api.fitiq.example")
    }
}
