import DemoAppSupport
import DemoAuthServer
import Foundation
import HTTPTypes
import Logging
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

@Suite("Demo app support", .logLeakCheck())
struct DemoAppSupportTests {
    @Test func wrongCredentialsReadAsARefusedSignIn() {
        let message = DemoFailure.describe(TokenRefreshError.signInRejected.with(status: 401))
        #expect(message == "sign-in refused: wrong e-mail or password (HTTP 401)")
    }

    @Test func aRefusedConnectionInsideAWrappedErrorReadsAsUnreachable() async throws {
        // A token endpoint wraps what its transport threw in a transient TokenRefreshError.
        let transport = MockTransport(script: [.failure(NetworkRetryError.cannotConnect)])
        let url = try #require(URL(string: "https://id.example.com/token"))
        let endpoint = TokenEndpoint(url: url, client: OAuthClient(id: "demo-app"), transport: transport)
        let wrapped = await #expect(throws: TokenRefreshError.transient) {
            _ = try await endpoint.requestToken([("grant_type", "client_credentials")])
        }
        #expect(DemoFailure.describe(try #require(wrapped)) == "cannot connect to the server (connection refused)")
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
        #expect(try #require(error).description.hasPrefix("cannot reach the auth server at http://127.0.0.1:9"))
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
