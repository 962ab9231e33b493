// Compiled only with the `AsyncHTTPClientTransport` package trait.
#if AsyncHTTPClientTransport
import AsyncHTTPClient
import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitAsyncHTTPClient
import TokenKitLogCheck
import TokenKitTestSupport
import TokenVerification

/// The AsyncHTTPClient key-set fetch and transport against a hostile server that streams a 64 MiB body (chunked, or
/// with a `Content-Length` that says so): each fails at its documented bound, and, reading with back-pressure, stops
/// the server long before the end of its stream.
@Suite(.logLeakCheck()) struct AsyncHTTPClientBoundedReadTests {
    /// Less than a quarter of the stream: the kernel's socket buffers take a few MiB after the client stops reading.
    static func expectCutOff(_ server: EndlessBodyServer, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            server.bodyBytesSent < server.totalBytes / 4,
            "the server wrote \(server.bodyBytesSent) of \(server.totalBytes) bytes before the client stopped reading",
            sourceLocation: sourceLocation)
    }

    @Test(arguments: [false, true])
    func theKeySetFetchStopsAnEndlessKeySetAtMaximumBytes(declaresLength: Bool) async throws {
        let server = try EndlessBodyServer(declaresLength: declaresLength)
        defer { server.stop() }
        try await withHTTPClient { http in
            let fetch = RemoteJWKSSource.asyncHTTPClientFetch(http)
            await #expect(throws: AsyncHTTPClientFetchError.bodyTooLarge(maximumBytes: 256 * 1024)) {
                _ = try await fetch(URL(string: "http://127.0.0.1:\(server.port)/jwks.json")!)
            }
        }
        Self.expectCutOff(server)
    }

    @Test(arguments: [false, true])
    func theTransportStopsAnEndlessAnswerAtItsMaximumResponseBodySize(declaresLength: Bool) async throws {
        let server = try EndlessBodyServer(declaresLength: declaresLength)
        defer { server.stop() }
        try await withHTTPClient { http in
            let request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/")
            await #expect(throws: NetworkRetryError.bodyTooLarge) {
                _ = try await AsyncHTTPClientTransport(client: http, maximumResponseBodySize: 1 << 20)
                    .send(request, body: nil)
            }
        }
        Self.expectCutOff(server)
    }
}
#endif
