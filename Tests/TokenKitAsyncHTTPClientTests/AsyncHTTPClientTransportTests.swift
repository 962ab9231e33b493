// Compiled only with the `AsyncHTTPClientTransport` and `OpenAPIMiddleware` package traits.
#if AsyncHTTPClientTransport && OpenAPIMiddleware
import AsyncHTTPClient
import AuthToken
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

@testable import TokenKitAsyncHTTPClient

@Suite(.logLeakCheck()) struct AsyncHTTPClientTransportTests {
    static func route(_ request: LoopbackServer.Request, _ port: Int) -> LoopbackServer.Response {
        switch request.path {
        case "/cross": return .init(status: 302, headers: [("Location", "http://localhost:\(port)/landing")])
        default:
            if request.headers["authorization"] == ["Bearer \(SequenceTokenProvider.expired)"] {
                return .init(status: 401, headers: [("WWW-Authenticate", #"Bearer error="invalid_token""#)])
            }
            return .init(status: 200, body: request.body)
        }
    }

    /// AsyncHTTPClient's logger in tests: at trace, so its lines (connection pool and each request) go to the
    /// log check's capture. Made on each use, after the check installed its logging backend.
    static var traceLogger: Logger {
        var logger = Logger(label: "async-http-client")
        logger.logLevel = .trace
        return logger
    }

    func withClient(_ body: (HTTPClient) async throws -> Void) async throws {
        try await withHTTPClient(logger: Self.traceLogger, body)
    }

    @Test func aRejectionIsRefreshedAndTheBodyReplayedOverAsyncHTTPClient() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        try await withClient { http in
            let provider = SequenceTokenProvider()
            let client = AuthenticatedClient(
                transport: AsyncHTTPClientTransport(client: http, logger: Self.traceLogger), tokenProvider: provider,
                configuration: .init(allowedOrigins: [
                    HTTPOrigin(scheme: "http", authority: "127.0.0.1:\(server.port)")!
                ]))
            let body = Data("steps=9000".utf8)
            let request = HTTPRequest(
                method: .post, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/v1/steps")
            let (response, echoed) = try await client.executeWithAutoRetry(request, body: body)
            #expect(response.status == .ok)
            #expect(echoed == body)
            #expect(
                server.received.map { $0.headers["authorization"] ?? [] } == [
                    ["Bearer \(SequenceTokenProvider.expired)"], ["Bearer \(SequenceTokenProvider.fresh)"],
                ])
            #expect(await provider.refreshCount == 1)
        }
    }

    @Test func redirectsComeBackUnfollowedAndTheClientDropsTheTokenOffOrigin() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        try await withClient { http in
            let client = AuthenticatedClient(
                transport: AsyncHTTPClientTransport(client: http, logger: Self.traceLogger),
                tokenProvider: SequenceTokenProvider(current: SequenceTokenProvider.fresh),
                configuration: .init(allowedOrigins: [
                    HTTPOrigin(scheme: "http", authority: "127.0.0.1:\(server.port)")!
                ]))
            let request = HTTPRequest(
                method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/cross")
            let (response, _) = try await client.executeWithAutoRetry(request)
            #expect(response.status == .ok)
            #expect(server.received.map(\.path) == ["/cross", "/landing"])
            #expect(server.received[1].headers["authorization"] == nil)
        }
    }

    // A refused connection is not exercised end to end: AsyncHTTPClient retries connecting until the request's
    // deadline (a real wait), so the mapping of what it finally throws is tested directly.
    @Test func clientErrorsAreMappedToNetworkRetryErrors() throws {
        let refused = AsyncHTTPClientTransport.mapped(IOError(errnoCode: ECONNREFUSED, reason: "connect"))
        #expect(refused as? NetworkRetryError == .cannotConnect)
        #expect(AsyncHTTPClientTransport.mapped(HTTPClientError.deadlineExceeded) as? NetworkRetryError == .timedOut)
        #expect(AsyncHTTPClientTransport.mapped(HTTPClientError.connectTimeout) as? NetworkRetryError == .timedOut)
        #expect(AsyncHTTPClientTransport.mapped(HTTPClientError.cancelled) is CancellationError)
        #expect(AsyncHTTPClientTransport.mapped(HTTPClientError.emptyHost) as? NetworkRetryError == .transport)
        #expect(AsyncHTTPClientTransport.mapped(NetworkRetryError.bodyTooLarge) as? NetworkRetryError == .bodyTooLarge)
    }

    /// A token endpoint that answers 307 to a collecting server on another port, and a refresh request to it.
    private static func redirectingEndpoint() throws -> (
        endpoint: LoopbackServer, target: LoopbackServer, request: HTTPRequest, form: Data
    ) {
        let target = try LoopbackServer { _, _ in .init(status: 200, body: Data(#"{"access_token": "x"}"#.utf8)) }
        let endpoint = try LoopbackServer { _, _ in
            .init(status: 307, headers: [("Location", "http://127.0.0.1:\(target.port)/collect")])
        }
        let request = HTTPRequest(
            method: .post, scheme: "http", authority: "127.0.0.1:\(endpoint.port)", path: "/oauth/token")
        return (endpoint, target, request, Data("grant_type=refresh_token&refresh_token=rt-held-by-the-app".utf8))
    }

    @Test func aTokenRequestRedirectedWith307NeverCarriesItsRefreshTokenToAnotherServer() async throws {
        let (endpoint, target, request, form) = try Self.redirectingEndpoint()
        defer { endpoint.stop(); target.stop() }
        let (response, _) = try await AsyncHTTPClientTransport(logger: Self.traceLogger).send(request, body: form)
        #expect(response.status.code == 307)
        #expect(endpoint.received.count == 1)
        #expect(target.received.isEmpty, "the redirect's target must receive nothing, the refresh token included")
    }

    /// A client that follows redirects (AsyncHTTPClient's default) would send a token request's body again to a 307
    /// target on another server: the transport refuses it and sends nothing.
    @Test func aClientThatFollowsRedirectsIsRefusedAndNothingIsSent() async throws {
        let (endpoint, target, request, form) = try Self.redirectingEndpoint()
        defer { endpoint.stop(); target.stop() }
        try await withHTTPClient(configuration: .init(), logger: Self.traceLogger) { http in
            let transport = AsyncHTTPClientTransport(client: http, logger: Self.traceLogger)
            #expect(transport.clientFollowsRedirects)
            await #expect(throws: NetworkRetryError.clientFollowsRedirects) {
                _ = try await transport.send(request, body: form)
            }
        }
        let following = HTTPClient.Configuration(
            redirectConfiguration: .follow(max: 3, allowCycles: false))
        try await withHTTPClient(configuration: following, logger: Self.traceLogger) { http in
            await #expect(throws: NetworkRetryError.clientFollowsRedirects) {
                _ = try await AsyncHTTPClientTransport(client: http).send(request, body: form)
            }
        }
        #expect(endpoint.received.isEmpty)
        #expect(target.received.isEmpty, "the redirect's target must receive nothing, the refresh token included")
        // A client that follows no redirect is taken.
        try await withClient { http in
            let transport = AsyncHTTPClientTransport(client: http, logger: Self.traceLogger)
            #expect(!transport.clientFollowsRedirects)
            let (response, _) = try await transport.send(request, body: form)
            #expect(response.status.code == 307)
        }
        #expect(target.received.isEmpty)
    }

    @Test func aResponseBodyOverTheLimitIsBodyTooLarge() async throws {
        let server = try LoopbackServer { _, _ in .init(status: 200, body: Data(repeating: 65, count: 100)) }
        defer { server.stop() }
        try await withClient { http in
            let request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/")
            await #expect(throws: NetworkRetryError.bodyTooLarge) {
                try await AsyncHTTPClientTransport(client: http, maximumResponseBodySize: 10, logger: Self.traceLogger)
                    .send(request, body: nil)
            }
        }
    }
}
#endif
