import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenVerification

/// The default fetch over a real loopback HTTP server: `Cache-Control`, status handling, and discovery.
@Suite(.logLeakCheck()) struct URLSessionFetchTests {
    static func route(_ request: LoopbackServer.Request, _ port: Int) -> LoopbackServer.Response {
        switch request.path {
        case "/jwks.json":
            return .init(
                status: 200,
                headers: [("Content-Type", "application/json"), ("Cache-Control", "public, max-age=120")],
                body: TestKeys.allJWKS)
        case "/moved":
            return .init(status: 302, headers: [("Location", "http://127.0.0.1:\(port)/jwks.json")])
        case "/.well-known/openid-configuration":
            let issuer = "http://127.0.0.1:\(port)"
            let body = #"{"issuer":"\#(issuer)","jwks_uri":"\#(issuer)/jwks.json"}"#
            return .init(status: 200, headers: [("Content-Type", "application/json")], body: Data(body.utf8))
        default:
            return .init(status: 404)
        }
    }

    @Test func theFetchPassesMaxAgeOn() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let fetch = RemoteJWKSSource.urlSessionFetch()
        let response = try await fetch(URL(string: "http://127.0.0.1:\(server.port)/jwks.json")!)
        #expect(response.body == TestKeys.allJWKS)
        #expect(response.maxAge == .seconds(120))
        #expect(server.received.first?.headers["accept"] == ["application/json"])
        await #expect(throws: (any Error).self) {
            try await fetch(URL(string: "http://127.0.0.1:\(server.port)/missing")!)
        }
    }

    @Test func aRedirectWithinTheOriginIsFollowed() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let response = try await RemoteJWKSSource.urlSessionFetch()(
            URL(string: "http://127.0.0.1:\(server.port)/moved")!)
        #expect(response.body == TestKeys.allJWKS)
    }

    @Test func discoveryOverHTTPToLoopbackVerifiesATokenEndToEnd() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let source = RemoteJWKSSource(
            location: .openIDDiscovery(issuer: URL(string: "http://127.0.0.1:\(server.port)")!))
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: JWSAlgorithm.asymmetric),
            keySource: source,
            now: { TestKeys.start })
        #expect(try await verifier.verify(TestKeys.token(.es256)).subject == "user_2abc")
        #expect(try await verifier.verify(TestKeys.token(.rs256)).subject == "user_2abc")
        #expect(server.received.map(\.path) == ["/.well-known/openid-configuration", "/jwks.json"])
    }
}
