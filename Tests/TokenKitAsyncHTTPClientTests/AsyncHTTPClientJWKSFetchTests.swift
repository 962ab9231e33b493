// Compiled only with the `AsyncHTTPClientTransport` and `OpenAPIMiddleware` package traits.
#if AsyncHTTPClientTransport && OpenAPIMiddleware
import AsyncHTTPClient
import Foundation
import Testing
import TokenKitAsyncHTTPClient
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenVerification

/// The JWKS fetch over AsyncHTTPClient: the body and `max-age` passed on, a non-200 status and an oversized body
/// refused by the fetch itself.
@Suite(.logLeakCheck()) struct AsyncHTTPClientJWKSFetchTests {
    static let keySet = Data(#"{"keys":[]}"#.utf8)

    static func route(_ request: LoopbackServer.Request, _ port: Int) -> LoopbackServer.Response {
        switch request.path {
        case "/jwks": return .init(status: 200, headers: [("Cache-Control", "public, max-age=120")], body: keySet)
        case "/huge": return .init(status: 200, body: Data(repeating: 0x20, count: 4096))
        case "/moved": return .init(status: 302, headers: [("Location", "http://127.0.0.1:\(port)/jwks")])
        default: return .init(status: 404)
        }
    }

    func fetch(_ path: String, maximumBytes: Int = 1024) async throws -> RemoteJWKSSource.Response {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        // AsyncHTTPClient's default configuration: it follows redirects, and the fetch judges them.
        return try await withHTTPClient(configuration: .init()) { http in
            let fetch = RemoteJWKSSource.asyncHTTPClientFetch(http, maximumBytes: maximumBytes)
            return try await fetch(URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
        }
    }

    @Test func theBodyAndItsMaxAgeArePassedOn() async throws {
        let response = try await fetch("/jwks")
        #expect(response.body == Self.keySet)
        #expect(response.maxAge == .seconds(120))
    }

    @Test func aStatusOtherThan200Throws() async throws {
        await #expect(throws: AsyncHTTPClientFetchError.status(404)) { try await fetch("/missing") }
    }

    @Test func aSameOriginRedirectIsFollowed() async throws {
        #expect(try await fetch("/moved").body == Self.keySet)
    }

    @Test func aRedirectToAnotherOriginDoesNotServeItsKeys() async throws {
        let attacker = try LoopbackServer { _, _ in .init(status: 200, body: Data(#"{"keys":[]}"#.utf8)) }
        defer { attacker.stop() }
        let issuer = try LoopbackServer { _, _ in
            .init(status: 302, headers: [("Location", "http://localhost:\(attacker.port)/jwks")])
        }
        defer { issuer.stop() }
        try await withHTTPClient(configuration: .init()) { http in
            let fetch = RemoteJWKSSource.asyncHTTPClientFetch(http)
            await #expect(throws: AsyncHTTPClientFetchError.crossOriginRedirect) {
                _ = try await fetch(URL(string: "http://127.0.0.1:\(issuer.port)/jwks")!)
            }
        }
    }

    @Test func aBodyOverTheCapStopsTheFetch() async throws {
        await #expect(throws: AsyncHTTPClientFetchError.bodyTooLarge(maximumBytes: 1024)) {
            try await fetch("/huge", maximumBytes: 1024)
        }
    }
}
#endif
