import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct MockTransportTests {
    struct Boom: Error {}

    @Test func itAnswersFromTheScriptThenTheHandlerAndRecordsEverything() async throws {
        let transport = MockTransport(script: [.response(status: .accepted, body: Data("a".utf8)), .failure(Boom())]) {
            request, body in (HTTPResponse(status: .ok), body ?? Data(request.method.rawValue.utf8))
        }
        var request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/x?y=1")
        request.headerFields[.contentType] = "text/plain"
        let first = try await transport.send(request, body: Data("one".utf8))
        #expect(first.0.status == .accepted)
        #expect(first.1 == Data("a".utf8))
        await #expect(throws: Boom.self) { try await transport.send(request, body: nil) }
        let third = try await transport.send(request, body: Data("three".utf8))
        #expect(third.1 == Data("three".utf8))

        let recorded = transport.requests
        #expect(recorded.count == 3)
        #expect(recorded.map(\.body) == [Data("one".utf8), nil, Data("three".utf8)])
        #expect(recorded[0].method == .post)
        #expect(recorded[0].scheme == "https")
        #expect(recorded[0].authority == "api.example.com")
        #expect(recorded[0].path == "/x?y=1")
        #expect(recorded[0].headerFields[.contentType] == "text/plain")
    }

    @Test func anExhaustedScriptWithoutHandlerThrows() async throws {
        let transport = MockTransport(script: [.response(status: .ok)])
        _ = try await transport.send(HTTPRequest(method: .get, scheme: "https", authority: "a", path: "/"), body: nil)
        let error = await #expect(throws: MockTransport.ScriptExhausted.self) {
            try await transport.send(HTTPRequest(method: .get, scheme: "https", authority: "a", path: "/"), body: nil)
        }
        #expect(error?.requestNumber == 2)
        transport.enqueue(.response(status: .created))
        #expect(transport.remainingScriptCount == 1)
        let (response, _) = try await transport.send(
            HTTPRequest(method: .get, scheme: "https", authority: "a", path: "/"), body: nil)
        #expect(response.status == .created)
    }

    @Test func descriptionsRedactCredentials() async throws {
        let transport = MockTransport(script: [.response(status: .ok)])
        var request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/me")
        request.headerFields[.authorization] = "Bearer tok-SECRET-1"
        request.headerFields[.cookie] = "sid=SECRET-2"
        request.headerFields[.proxyAuthorization] = "Basic SECRET-3"
        request.headerFields[.accept] = "application/json"
        _ = try await transport.send(request, body: Data("{}".utf8))
        #expect(transport.requests[0].bearerToken == "tok-SECRET-1")
        for text in [transport.description, transport.requests[0].description, "\(transport.requests)"] {
            #expect(!text.contains("SECRET"))
            #expect(text.contains("authorization: <redacted>") || text.contains("Authorization: <redacted>"))
            #expect(text.contains("application/json"))
            #expect(text.contains("https://api.example.com/me"))
        }
    }
}
