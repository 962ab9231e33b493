import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck

@Suite(.logLeakCheck()) struct HTTPTransportTests {
    struct Echo: HTTPTransport {
        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            (HTTPResponse(status: .ok), body ?? Data())
        }
    }

    @Test func aTransportReturnsTheBodyItWasGiven() async throws {
        let (response, body) = try await Echo().send(
            HTTPRequest(method: .post, scheme: "https", authority: "example.com", path: "/"), body: Data("x".utf8))
        #expect(response.status == .ok)
        #expect(body == Data("x".utf8))
    }
}
