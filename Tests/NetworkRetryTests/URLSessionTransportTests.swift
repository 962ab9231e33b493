import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.logLeakCheck()) struct URLSessionTransportTests {
    /// Answers `Bearer fresh-bearer-x2` with 200 and an echo of the body, `Bearer expired-bearer-x1` with an `invalid_token` 401,
    /// `/cross` with a redirect to `localhost` (another origin than `127.0.0.1`), `/same` with a relative
    /// redirect, and `/challenges` with two `WWW-Authenticate` lines.
    static func route(_ request: LoopbackServer.Request, _ port: Int) -> LoopbackServer.Response {
        let authorization = request.headers["authorization"]?.first
        switch request.path {
        case "/cross": return .init(status: 302, headers: [("Location", "http://localhost:\(port)/landing")])
        case "/away": return .init(status: 307, headers: [("Location", "http://localhost:\(port)/back")])
        case "/back": return .init(status: 307, headers: [("Location", "http://127.0.0.1:\(port)/v1/admin/delete")])
        case "/same": return .init(status: 302, headers: [("Location", "/landing")])
        case "/landing": return .init(status: 200, body: Data("landed".utf8))
        case "/cookies":
            return .init(
                status: 200,
                headers: [
                    ("Set-Cookie", "csrftoken=csrf-value-1; expires=Tue, 23 Nov 2027 07:21:15 GMT; Path=/"),
                    ("Set-Cookie", "sessionid=session-value-2; expires=Tue, 08 Dec 2026 07:21:15 GMT; HttpOnly"),
                ])
        case "/challenges":
            return .init(
                status: 401,
                headers: [
                    ("WWW-Authenticate", #"Basic realm="x""#),
                    ("WWW-Authenticate", "Bearer error=\"insufficient_scope\""),
                ])
        default:
            if authorization == "Bearer expired-bearer-x1" {
                return .init(
                    status: 401, headers: [("WWW-Authenticate", #"Bearer error="invalid_token""#)],
                    body: Data("<html>no</html>".utf8))
            }
            return .init(status: 200, headers: [("X-Echo-Method", request.method)], body: request.body)
        }
    }

    func client(port: Int, provider: FakeTokenProvider) -> AuthenticatedClient {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 20
        return AuthenticatedClient(
            transport: URLSessionTransport(configuration: configuration), tokenProvider: provider,
            configuration: .init(allowedOrigins: [HTTPOrigin(scheme: "http", authority: "127.0.0.1:\(port)")!]))
    }

    func request(_ method: HTTPRequest.Method = .get, _ path: String, port: Int) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:\(port)", path: path)
    }

    @Test func aRealServerRejectionIsRefreshedAndTheBodyReplayed() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let provider = FakeTokenProvider()
        let body = Data(#"{"calories":420}"#.utf8)
        var request = request(.post, "/v1/meals", port: server.port)
        request.headerFields[.contentType] = "application/json"
        let (response, echoed) = try await client(port: server.port, provider: provider)
            .executeWithAutoRetry(request, body: body)
        #expect(response.status == .ok)
        #expect(response.headerFields[HTTPField.Name("X-Echo-Method")!] == "POST")
        #expect(echoed == body)
        let received = server.received
        #expect(
            received.map { $0.headers["authorization"] ?? [] } == [
                ["Bearer expired-bearer-x1"], ["Bearer fresh-bearer-x2"],
            ])
        #expect(received.map(\.body) == [body, body])
        #expect(await provider.refreshCount == 1)
    }

    /// A body past the bound: declared by `Content-Length`, or growing in chunks without one.
    @Test(arguments: [false, true])
    func aResponseBodyPastTheBoundIsResponseTooLarge(chunked: Bool) async throws {
        let server = try LoopbackServer { request, _ in
            let size = request.path == "/large" ? 64 * 1024 : 16 * 1024
            return .init(
                status: 200, headers: chunked ? [("Transfer-Encoding", "chunked")] : [],
                body: Data(repeating: UInt8(ascii: "a"), count: size))
        }
        defer { server.stop() }
        let transport = URLSessionTransport(maximumResponseBytes: 32 * 1024)
        #expect(transport.maximumResponseBytes == 32 * 1024)
        let error = await #expect(throws: NetworkRetryError.self) {
            try await transport.send(request(.get, "/large", port: server.port), body: nil)
        }
        #expect(error == .responseTooLarge)
        // One within the bound is read whole, by the same transport.
        let (response, body) = try await transport.send(request(.get, "/small", port: server.port), body: nil)
        #expect(response.status.code == 200)
        #expect(body.count == 16 * 1024)
    }

    @Test func theTransportReturnsRedirectsUnfollowed() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let transport = URLSessionTransport()
        var request = request(.get, "/cross", port: server.port)
        request.headerFields[.authorization] = "Bearer fresh-bearer-x2"
        let (response, _) = try await transport.send(request, body: nil)
        #expect(response.status.code == 302)
        #expect(response.headerFields[.location] == "http://localhost:\(server.port)/landing")
        #expect(server.received.map(\.path) == ["/cross"])
    }

    @Test func aCrossOriginRedirectOnARealServerArrivesWithoutAuthorization() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let provider = FakeTokenProvider(current: "fresh-bearer-x2")
        let (response, body) = try await client(port: server.port, provider: provider)
            .executeWithAutoRetry(request(.get, "/cross", port: server.port))
        #expect(response.status == .ok)
        #expect(body == Data("landed".utf8))
        let received = server.received
        #expect(received.map(\.path) == ["/cross", "/landing"])
        #expect(received[0].headers["authorization"] == ["Bearer fresh-bearer-x2"])
        #expect(received[1].headers["authorization"] == nil)
    }

    /// Over real HTTP: 127.0.0.1 -> localhost -> 127.0.0.1 carries no credentials after
    /// the first hop.
    @Test func aRedirectThatComesBackOnARealServerArrivesWithoutCredentials() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let provider = FakeTokenProvider(current: "fresh-bearer-x2")
        var request = request(.post, "/away", port: server.port)
        request.headerFields[.cookie] = "session=loopback-cookie-value"
        // Without a body: a body is never replayed to another origin.
        let (response, _) = try await client(port: server.port, provider: provider).executeWithAutoRetry(request)
        #expect(response.status == .ok)
        let received = server.received
        #expect(received.map(\.path) == ["/away", "/back", "/v1/admin/delete"])
        #expect(received.map { $0.headers["authorization"] ?? [] } == [["Bearer fresh-bearer-x2"], [], []])
        #expect(received.map { $0.headers["cookie"] ?? [] } == [["session=loopback-cookie-value"], [], []])
    }

    @Test func aSameOriginRedirectOnARealServerKeepsAuthorization() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let provider = FakeTokenProvider(current: "fresh-bearer-x2")
        _ = try await client(port: server.port, provider: provider)
            .executeWithAutoRetry(request(.get, "/same", port: server.port))
        #expect(
            server.received.map { $0.headers["authorization"] ?? [] } == [
                ["Bearer fresh-bearer-x2"], ["Bearer fresh-bearer-x2"],
            ])
    }

    @Test func severalChallengeLinesSurviveURLSession() async throws {
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        await #expect(throws: NetworkRetryError.insufficientScope) {
            try await client(port: server.port, provider: FakeTokenProvider(current: "fresh-bearer-x2"))
                .executeWithAutoRetry(request(.get, "/challenges", port: server.port))
        }
    }

    @Test func twoSetCookieLinesSurviveURLSessionAsTwoFields() async throws {
        TestSecrets.shared.register("csrf-value-1", as: .credential)
        TestSecrets.shared.register("session-value-2", as: .credential)
        let server = try LoopbackServer(route: Self.route)
        defer { server.stop() }
        let cookiesRequest = request(.get, "/cookies", port: server.port)
        let (response, _) = try await URLSessionTransport().send(cookiesRequest, body: nil)
        let cookies = try response.headerFields[values: .setCookie].map {
            try SetCookie(parsing: $0, requestHost: "127.0.0.1", requestIsSecure: false, now: Date())
        }
        #expect(cookies.map(\.name) == ["csrftoken", "sessionid"])
        #expect(cookies.map(\.value) == ["csrf-value-1", "session-value-2"])
        #expect(cookies.allSatisfy { $0.expiresAt != nil }, "the Expires dates, commas and all, stayed whole")
    }

    @Test(arguments: [
        ("a=1", ["a=1"]),
        ("a=1; Expires=Tue, 23 Nov 2027 07:21:15 GMT", ["a=1; Expires=Tue, 23 Nov 2027 07:21:15 GMT"]),
        (
            "a=1; Expires=Tue, 23 Nov 2027 07:21:15 GMT, b=2; HttpOnly",
            ["a=1; Expires=Tue, 23 Nov 2027 07:21:15 GMT", "b=2; HttpOnly"]
        ),
        (" a=1; Path=/, b=2, c=; Max-Age=0", ["a=1; Path=/", "b=2", "c=; Max-Age=0"]),
        ("a=1; Expires=Wed, 09-Jun-2027 10:18:14 GMT,b=2", ["a=1; Expires=Wed, 09-Jun-2027 10:18:14 GMT", "b=2"]),
        ("a=x,y; Path=/", ["a=x,y; Path=/"]),
        ("", []),
    ])
    func joinedSetCookieLinesAreSplitPerCookie(joined: String, expected: [String]) {
        #expect(URLSessionTransport.splitJoinedSetCookie(joined) == expected)
    }

    @Test func aRefusedConnectionIsCannotConnect() async throws {
        let port = try LoopbackServer.closedPort()
        let error = await #expect(throws: NetworkRetryError.self) {
            try await URLSessionTransport().send(request(.get, "/", port: port), body: nil)
        }
        #expect(error == .cannotConnect)
        #expect(error?.underlying is URLError)
    }
}
