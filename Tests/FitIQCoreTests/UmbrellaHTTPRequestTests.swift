import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Only `import TokenKit` (no `import HTTPTypes`): what an app's file sees.

@Suite(.logLeakCheck()) struct UmbrellaHTTPRequestTests {
    static let urls = [
        "https://api.fitiq.example/api/v1/users/?page=2&q=a%2Fb",
        "https://api.fitiq.example:8443/api/v1/users/",
        "https://api.fitiq.example/api/v1/files/a%20b/?sort=name",
        "https://api.fitiq.example/?q=1",
        "https://api.fitiq.example",
    ]

    @Test(arguments: urls)
    func anHTTPRequestBuiltFromAURLKeepsItsTrailingSlashAndQuery(text: String) throws {
        let url = try #require(URL(string: text))
        let request = HTTPRequest(url: url)
        let expectedPath = text.dropFirst("https://".count).drop { $0 != "/" }
        #expect(request.path == (expectedPath.isEmpty ? "/" : String(expectedPath)))
        #expect(request.method == .get)
        #expect(request.url?.absoluteString == (expectedPath.isEmpty ? text + "/" : text))
    }

    @Test(arguments: urls)
    func theAppsNetworkClientOverATransportSendsThePathAsWritten(text: String) async throws {
        let url = try #require(URL(string: text))
        let transport = MockTransport(script: [.response(status: .ok)])
        let client = HTTPTransportNetworkClient(transport: transport)
        _ = try await client.executeRequest(request: URLRequest(url: url))
        let expectedPath = text.dropFirst("https://".count).drop { $0 != "/" }
        #expect(transport.requests.first?.path == (expectedPath.isEmpty ? "/" : String(expectedPath)))
    }
}
