// Compiled only with the `AsyncHTTPClientTransport` package trait.
#if AsyncHTTPClientTransport
import AsyncHTTPClient
import Foundation
import Testing
import TokenKitAsyncHTTPClient
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
@testable import TokenVerification

/// RFC 7662 introspection over AsyncHTTPClient against a real HTTP server on loopback: the same outcomes as the
/// URLSession send (active, inactive, refused credentials, an answer too large, an endpoint that is down), the
/// configured client authentication on the wire, and no redirect followed with the form. The public send takes no
/// client; the send over a client of the test's own sets the connection pool or follows redirects.
@Suite(.logLeakCheck()) struct AsyncHTTPClientIntrospectionTests {
    static let clientID = "orders-api"

    /// A token and a client secret, registered with the log check.
    static func credentials() -> (token: String, secret: String) {
        let token = "ahctoken" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let secret = "ahc-secret-" + UUID().uuidString
        TestSecrets.shared.register(token, as: .accessToken)
        TestSecrets.shared.register(secret, as: .clientSecret)
        return (token, secret)
    }

    /// A verifier that asks `port` over `http` with `send`, the public AsyncHTTPClient send by default. A manual
    /// clock: the verifier's own timeout never fires, so only the send can end a call.
    static func verifier(
        port: Int, send: @escaping IntrospectionVerifier.Send = IntrospectionVerifier.asyncHTTPClientSend(),
        authentication: IntrospectionVerifier.ClientAuthentication
    ) -> IntrospectionVerifier {
        IntrospectionVerifier(
            configuration: .init(
                endpoint: URL(string: "http://127.0.0.1:\(port)/o/introspect/")!,
                clientAuthentication: authentication,
                audience: .notChecked(reason: "the test server binds no audience")),
            clock: ManualClock(), send: send)
    }

    /// An endpoint that answers `active` for `token` when the request carries `authorization`, 401 otherwise.
    static func endpoint(token: String, authorization: String, active: Bool = true) throws -> LoopbackServer {
        try LoopbackServer { request, _ in
            guard request.path == "/o/introspect/", request.method == "POST" else { return .init(status: 404) }
            guard request.headers["authorization"] == [authorization] else { return .init(status: 401) }
            let form = String(decoding: request.body, as: UTF8.self)
            let answer =
                active && form.split(separator: "&").contains("token=\(token)")
                ? #"{"active": true, "sub": "user-1", "scope": "orders"}"# : #"{"active": false}"#
            return .init(status: 200, headers: [("Content-Type", "application/json")], body: Data(answer.utf8))
        }
    }

    static func basic(_ secret: String) -> String {
        "Basic " + Data("\(clientID):\(secret)".utf8).base64EncodedString()
    }

    /// Verifies `token` against the endpoint on `port` with the public send, expecting `error`.
    static func expect(
        _ error: TokenVerificationError, verifying token: String, port: Int,
        authentication: IntrospectionVerifier.ClientAuthentication, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let verifier = Self.verifier(port: port, authentication: authentication)
        await #expect(throws: error, sourceLocation: sourceLocation) { try await verifier.verify(token) }
    }

    /// Verifies `token` against the endpoint on `port` over a client of the test's own with `configuration`,
    /// expecting `error`.
    static func expect(
        _ error: TokenVerificationError, verifying token: String, port: Int,
        authentication: IntrospectionVerifier.ClientAuthentication, configuration: HTTPClient.Configuration,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await withHTTPClient(configuration: configuration) { http in
            let verifier = Self.verifier(
                port: port, send: IntrospectionVerifier.asyncHTTPClientSend(http), authentication: authentication)
            await #expect(throws: error, sourceLocation: sourceLocation) { try await verifier.verify(token) }
        }
    }

    /// An endpoint that answers the introspection path with a redirect of `status` to another path of its own, which
    /// answers `active`.
    static func redirecting(status: Int) throws -> LoopbackServer {
        try LoopbackServer { request, port in
            if request.path == "/o/introspect/" {
                return .init(status: status, headers: [("Location", "http://127.0.0.1:\(port)/elsewhere")])
            }
            return .init(status: 200, body: Data(#"{"active": true, "sub": "user-1"}"#.utf8))
        }
    }

    @Test func anActiveAnswerAuthenticatesWithClientSecretBasicOnTheWire() async throws {
        let (token, secret) = Self.credentials()
        let server = try Self.endpoint(token: token, authorization: Self.basic(secret))
        defer { server.stop() }
        let claims = try await Self.verifier(
            port: server.port, authentication: .clientSecretBasic(id: Self.clientID, secret: secret)
        )
        .verify(token)
        #expect(claims.isIntrospected)
        #expect(claims.subject == "user-1")
        #expect(claims.string("scope") == "orders")
        let request = try #require(server.received.first)
        #expect(request.headers["content-type"] == ["application/x-www-form-urlencoded"])
        #expect(request.headers["accept"] == ["application/json"])
    }

    @Test func clientSecretPostSendsTheCredentialsInTheForm() async throws {
        let (token, secret) = Self.credentials()
        let server = try LoopbackServer { request, _ in
            let form = Set(String(decoding: request.body, as: UTF8.self).split(separator: "&").map(String.init))
            let authenticated =
                request.headers["authorization"] == nil
                && form.isSuperset(of: ["token=\(token)", "client_id=\(Self.clientID)", "client_secret=\(secret)"])
            return .init(status: authenticated ? 200 : 401, body: Data(#"{"active": true, "sub": "user-1"}"#.utf8))
        }
        defer { server.stop() }
        let subject = try await Self.verifier(
            port: server.port, authentication: .clientSecretPost(id: Self.clientID, secret: secret)
        )
        .verify(token).subject
        #expect(subject == "user-1")
    }

    @Test func anInactiveAnswerIsAnInvalidToken() async throws {
        let (token, secret) = Self.credentials()
        let server = try Self.endpoint(token: token, authorization: Self.basic(secret), active: false)
        defer { server.stop() }
        await Self.expect(
            .tokenInactive, verifying: token, port: server.port,
            authentication: .clientSecretBasic(id: Self.clientID, secret: secret))
    }

    @Test func anEndpointThatRefusesThisServersCredentialsIsClientRejected() async throws {
        let (token, secret) = Self.credentials()
        let server = try Self.endpoint(token: token, authorization: Self.basic("another-" + secret))
        defer { server.stop() }
        await Self.expect(
            .introspectionClientRejected, verifying: token, port: server.port,
            authentication: .clientSecretBasic(id: Self.clientID, secret: secret))
    }

    @Test(arguments: [false, true])
    func anEndlessAnswerIsUnavailableAndTheServerIsStoppedNearTheBound(declaresLength: Bool) async throws {
        let (token, secret) = Self.credentials()
        let server = try EndlessBodyServer(declaresLength: declaresLength)
        defer { server.stop() }
        await Self.expect(
            .introspectionUnavailable, verifying: token, port: server.port,
            authentication: .clientSecretBasic(id: Self.clientID, secret: secret))
        AsyncHTTPClientBoundedReadTests.expectCutOff(server)
    }

    @Test func theSendThrowsAtTheRequestsBoundAsTheURLSessionSendDoes() async throws {
        let (token, secret) = Self.credentials()
        let server = try EndlessBodyServer()
        defer { server.stop() }
        let request = IntrospectionVerifier.Request.probe(
            token: token, port: server.port, authentication: .clientSecretBasic(id: Self.clientID, secret: secret))
        #expect(request.maximumResponseBytes == 64 * 1024)
        await #expect(throws: URLError(.dataLengthExceedsMaximum)) {
            let response = try await IntrospectionVerifier.asyncHTTPClientSend()(request)
            Issue.record("the send handed over \(response.body.count) bytes")
        }
        AsyncHTTPClientBoundedReadTests.expectCutOff(server)
    }

    @Test func anEndpointThatIsDownIsUnavailable() async throws {
        let (token, secret) = Self.credentials()
        let port = try LoopbackServer.closedPort()
        // A client of the test's own, without retries: it fails at the refused connection instead of retrying until
        // its deadline, as the public send's client does.
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        try await Self.expect(
            .introspectionUnavailable, verifying: token, port: port,
            authentication: .clientSecretBasic(id: Self.clientID, secret: secret), configuration: configuration)
    }

    @Test func aRedirectIsNotFollowedSoTheTokenGoesToTheConfiguredEndpointOnly() async throws {
        let (token, secret) = Self.credentials()
        let server = try Self.redirecting(status: 307)
        defer { server.stop() }
        await Self.expect(
            .introspectionUnavailable, verifying: token, port: server.port,
            authentication: .clientSecretPost(id: Self.clientID, secret: secret))
        #expect(server.received.map(\.path) == ["/o/introspect/"], "the 307 must not carry the form elsewhere")
    }

    @Test func anEndpointRedirectingWith307CannotCarryTheTokenToAnotherServer() async throws {
        let (token, secret) = Self.credentials()
        let target = try LoopbackServer { _, _ in
            .init(status: 200, body: Data(#"{"active": true, "sub": "someone-else"}"#.utf8))
        }
        defer { target.stop() }
        let endpoint = try LoopbackServer { _, _ in
            .init(status: 307, headers: [("Location", "http://127.0.0.1:\(target.port)/collect")])
        }
        defer { endpoint.stop() }
        let verifier = IntrospectionVerifier(
            configuration: .init(
                endpoint: URL(string: "http://127.0.0.1:\(endpoint.port)/o/introspect/")!,
                clientAuthentication: .clientSecretPost(id: Self.clientID, secret: secret),
                audience: .notChecked(reason: "the test server binds no audience")),
            clock: ManualClock(), send: IntrospectionVerifier.asyncHTTPClientSend())
        await #expect(throws: TokenVerificationError.introspectionUnavailable) { try await verifier.verify(token) }
        #expect(endpoint.received.count == 1)
        #expect(target.received.isEmpty, "the redirect's target must receive nothing, form and token included")
    }

    @Test func anAnswerReachedThroughARedirectIsNeverUsed() async throws {
        let (token, secret) = Self.credentials()
        let server = try Self.redirecting(status: 302)
        defer { server.stop() }
        // A client of the test's own that follows redirects (AsyncHTTPClient's default): the 302 turns the POST into
        // a GET without the form, and the answer it reaches must not count.
        try await Self.expect(
            .introspectionUnavailable, verifying: token, port: server.port,
            authentication: .clientSecretBasic(id: Self.clientID, secret: secret), configuration: .init())
        #expect(server.received.map(\.path) == ["/o/introspect/", "/elsewhere"])
    }
}

extension IntrospectionVerifier.Request {
    /// The request the verifier sends for `token` to the endpoint on `port`, with the default bound (64 KiB).
    static func probe(token: String, port: Int, authentication: IntrospectionVerifier.ClientAuthentication) -> Self {
        IntrospectionVerifier.request(
            token,
            configuration: .init(
                endpoint: URL(string: "http://127.0.0.1:\(port)/o/introspect/")!, clientAuthentication: authentication,
                audience: .notChecked(reason: "the test server binds no audience")))
    }
}
#endif
