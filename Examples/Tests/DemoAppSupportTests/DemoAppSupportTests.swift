import DemoAppSupport
import DemoAuthServer
import Foundation
import HTTPTypes
import Logging
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Demo app support", .logLeakCheck())
struct DemoAppSupportTests {
    @Test func wrongCredentialsReadAsARefusedSignIn() {
        let message = DemoFailure.describe(TokenRefreshError.signInRejected.with(status: 401))
        #expect(message == "sign-in refused: wrong e-mail or password (HTTP 401)")
    }

    /// betterauth-demo's sign-up with a taken username: the server's `{"error": ...}` is what the line says, not
    /// "wrong e-mail or password".
    @Test func aRefusedSignUpReadsAsWhatTheServerSaid() async throws {
        let transport = MockTransport { _, _ in
            (HTTPResponse(status: .init(code: 422)), Data(#"{"error":"Username already exists"}"#.utf8))
        }
        let strategy = CookieSessionStrategy(
            baseURL: URL(string: "https://chat.example.com")!, cookieName: "better-auth.session_token",
            transport: transport)
        let auth = TokenRefreshClient(strategy: strategy)
        var message = ""
        do {
            try await auth.signIn(strategy.signIn(path: "/api/auth/sign-up/email", body: Data("{}".utf8)))
        } catch {
            message = DemoFailure.describe(error)
        }
        #expect(message == "refused by the server: This username is already taken. (HTTP 422)")
    }

    @Test func aRefusedConnectionInsideAWrappedErrorReadsAsRefused() async throws {
        // A token endpoint wraps what its transport threw in a transient TokenRefreshError.
        let refused = NetworkRetryError.cannotConnect.with(underlying: URLError(.cannotConnectToHost))
        let transport = MockTransport(script: [.failure(refused)])
        let url = try #require(URL(string: "https://id.example.com/token"))
        let endpoint = TokenEndpoint(url: url, client: OAuthClient(id: "demo-app"), transport: transport)
        let wrapped = await #expect(throws: TokenRefreshError.transient) {
            _ = try await endpoint.requestToken([("grant_type", "client_credentials")])
        }
        #expect(
            DemoFailure.describe(try #require(wrapped))
                == "connection refused: nothing listens at that address and port")
    }

    static let connectionFailures: [(NetworkRetryError, String)] = [
        (.cannotConnect.with(underlying: URLError(.cannotFindHost)), "the host name does not resolve"),
        (.cannotConnect.with(underlying: URLError(.cannotConnectToHost)), "connection refused"),
        (.timedOut.with(underlying: URLError(.timedOut)), "no answer in time (timed out)"),
        (.transport.with(underlying: URLError(.secureConnectionFailed)), "the TLS handshake failed"),
        (.cannotConnect, "cannot connect to the server"),
    ]

    @Test(arguments: connectionFailures)
    func eachConnectionFailureReadsDifferently(error: NetworkRetryError, message: String) {
        #expect(DemoFailure.describe(error).hasPrefix(message))
    }

    static func record(
        _ grant: DemoAuthServer.IssueRecord.Grant, at issuedAt: Double, family: String = "family-a"
    ) -> DemoAuthServer.IssueRecord {
        .init(grant: grant, family: family, issuedAt: issuedAt, expiresAt: Int(issuedAt.rounded(.down)) + 3)
    }

    @Test func refreshesAreCountedAgainstTheExpiriesThatElapsed() {
        // A slow round: two refreshes, each after the token before it expired (at 103 and 106).
        let slow = [
            Self.record(.login, at: 100.2), Self.record(.refresh, at: 103.0), Self.record(.refresh, at: 106.4),
            Self.record(.login, at: 101, family: "family-b"),
        ]
        let account = RefreshAccount(log: slow, family: "family-a")
        #expect(account.refreshes == 2)
        #expect(account.afterExpiry == 2)
        #expect(account.early == 0)
        #expect(RefreshAccount(log: slow, family: "family-a", skipping: 2).refreshes == 1)
    }

    @Test func aRefreshOfAStillValidTokenIsEarly() {
        // The second refresh comes at 104.9, while the token issued at 103.5 is valid until 106.
        let broken = [
            Self.record(.login, at: 100.2), Self.record(.refresh, at: 103.5), Self.record(.refresh, at: 104.9),
        ]
        let account = RefreshAccount(log: broken, family: "family-a")
        #expect(account.refreshes == 2)
        #expect(account.early == 1)
    }

    static func expiredRejection() -> MockTransport.Reply {
        .response(
            status: .unauthorized,
            headers: [.wwwAuthenticate: #"Bearer error="invalid_token", error_description="The access token expired""#])
    }

    @Test func aRetryWhoseNewTokenExpiredInFlightIsTold() async throws {
        let transport = CountingTransport(MockTransport(script: [Self.expiredRejection(), Self.expiredRejection()]))
        let log = AttemptLog()
        try await AttemptLog.$current.withValue(log) {
            var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:1", path: "/")
            request.headerFields[.authorization] = "Bearer old-token-for-test"
            _ = try await transport.send(request, body: nil)
            request.headerFields[.authorization] = "Bearer new-token-for-test"
            _ = try await transport.send(request, body: nil)
        }
        #expect(log.retryOutlivedItsToken)
    }

    @Test func aRetryWithTheSameTokenIsNotExcused() async throws {
        let transport = CountingTransport(MockTransport(script: [Self.expiredRejection(), Self.expiredRejection()]))
        let log = AttemptLog()
        try await AttemptLog.$current.withValue(log) {
            var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:1", path: "/")
            request.headerFields[.authorization] = "Bearer same-token-for-test"
            _ = try await transport.send(request, body: nil)
            _ = try await transport.send(request, body: nil)
        }
        #expect(!log.retryOutlivedItsToken)
    }

    @Test func aMessageIsAlwaysOneLine() {
        let message = DemoFailure.describe(DemoFailure("first\nsecond\r\nthird"))
        #expect(message == "first second third")
    }

    @Test func theTransportCountsRequestsAndUnauthorizedAnswers() async throws {
        let answers = MockTransport(script: [
            .response(status: .unauthorized), .response(status: .ok), .response(status: .unauthorized),
        ])
        let transport = CountingTransport(answers)
        let request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:1", path: "/")
        for _ in 0..<3 { _ = try await transport.send(request, body: nil) }
        #expect(transport.requests == 3)
        #expect(transport.unauthorized == 2)
    }

    @Test func aFailedExpectationFailsTheReport() {
        let report = DemoReport(title: "test report")
        report.expect(true, "holds", "1 == 1", proves: "nothing")
        #expect(!report.failed)
        report.expect(false, "breaks", "1 != 2", proves: "a failure is counted")
        #expect(report.failed)
    }

    @Test func aServerURLThatIsNotHTTPIsRefusedWithAMessage() async {
        await #expect(throws: DemoFailure.self) {
            _ = try await DemoBackend.start(external: "ftp://127.0.0.1", configuration: .init())
        }
    }

    @Test func anUnreachableServerIsReportedAsSuch() async throws {
        let error = await #expect(throws: DemoFailure.self) {
            _ = try await DemoBackend.start(external: "http://127.0.0.1:9", configuration: .init())
        }
        #expect(try #require(error).description.hasPrefix("cannot reach the auth server at http://127.0.0.1:9: "))
    }

    @Test func theInProcessServerCountsAndRevokes() async throws {
        var logger = Logger(label: "demo-auth-server")
        logger.logLevel = .trace  // every line of the server and of Hummingbird goes to the log check
        let configuration = DemoAuthServer.Configuration()
        for user in configuration.users { TestSecrets.shared.register(user.password, as: .password) }
        for case let secret? in configuration.clients.map(\.secret) {
            TestSecrets.shared.register(secret, as: .clientSecret)
        }
        if let apiKey = configuration.apiKey { TestSecrets.shared.register(apiKey, as: .credential) }
        let backend = try await DemoBackend.start(external: nil, configuration: configuration, logger: logger)
        let stats = try await backend.stats()
        try await backend.revokeAllSessions()
        try await backend.setFaults(#"{"html_everywhere": true}"#)
        await backend.stop()
        #expect(stats["logins"] == 0)
        #expect(backend.server?.faults.htmlEverywhere == true)
    }
}
