import ArgumentParser
import DemoAppSupport
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import TokenKit

/// `session-worker`: one app process of several that share one file store (the multi-process fault test).
///
/// It resumes the session in `--store-dir` (signing in only when the store is empty), then, for each of
/// `--expiries` access-token expiries, waits until the token it holds is due for a refresh and fires
/// `--requests` concurrent requests. Every process waits for the same token, so they meet at each expiry; the
/// store's lock and the re-read before refreshing must make that one refresh for all of them. It exits non-zero
/// when any request fails.
@main
struct SessionWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session-worker",
        abstract: "One of several processes sharing a FileTokenStore against the demo auth server.")

    @Option(help: ArgumentHelp("The demo auth server, such as http://127.0.0.1:8080.", valueName: "url"))
    var server: String

    @Option(help: ArgumentHelp("The FileTokenStore directory shared by the processes.", valueName: "directory"))
    var storeDir: String

    @Option(help: "Concurrent requests per expiry.")
    var requests = 50

    @Option(help: "How many access-token expiries to go through.")
    var expiries = 3

    @OptionGroup var account: DemoAccountOptions

    func validate() throws {
        guard (1...500).contains(requests) else { throw ValidationError("--requests must be 1...500") }
        guard (1...20).contains(expiries) else { throw ValidationError("--expiries must be 1...20") }
    }

    func run() async throws {
        guard let baseURL = URL(string: server), let origin = HTTPOrigin(baseURL) else {
            throw ValidationError("--server \(server) is not an http(s) URL")
        }
        let failed = try await DemoProcess.run(removingAtExit: nil) {
            let (refresher, api) = try await resumeOrSignIn(baseURL: baseURL, origin: origin)
            var failed = 0
            for round in 1...expiries {
                try await waitUntilDue(refresher)
                let errors = await runConcurrently(requests) { _ in
                    _ = try await api.call(.get, baseURL, "api/v1/progress")
                }
                failed += errors.lines.count + errors.outlived
                DemoOutput.line(
                    "round \(round): \(requests) requests, \(errors.lines.count + errors.outlived) failed\(errors.first)"
                )
            }
            return failed
        }
        if failed > 0 { throw ExitCode.failure }
    }

    /// The refresh client on the shared store (signed in only when the store is empty) and the API client.
    private func resumeOrSignIn(
        baseURL: URL, origin: HTTPOrigin
    ) async throws -> (TokenRefreshClient, AuthenticatedClient) {
        let transport = DemoTransport.urlSession()
        let refresher = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(baseURL: baseURL, apiKey: account.apiKey, transport: transport),
            store: FileTokenStore(directory: URL(fileURLWithPath: storeDir, isDirectory: true)),
            configuration: DemoRefreshConfiguration.shortLivedTokens)
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: refresher, configuration: .init(allowedOrigins: [origin]))
        var state = await refresher.restoreSession()
        if case .signedOut = state {
            try await refresher.signIn(
                fitIQLogin(
                    baseURL: baseURL, email: account.email, password: account.password, apiKey: account.apiKey,
                    transport: transport))
            state = refresher.currentState
        }
        guard state.hasSession else { throw DemoFailure("no session: the store answered \(state)") }
        return (refresher, api)
    }

    /// Waits in real time until the token held is due for a refresh (the expiry policy's margin before `exp`):
    /// every process holds the same token, so they all start the round together. This wait is the test.
    private func waitUntilDue(_ refresher: TokenRefreshClient) async throws {
        guard let token = refresher.currentToken, let expiresAt = token.expiresAt else { return }
        let policy = refresher.configuration.expiryPolicy
        let margin =
            policy.effectiveLeeway(lifetime: token.lifetime)
            + policy.effectiveRefreshThreshold(lifetime: token.lifetime)
        try await waitInRealTime(until: expiresAt.addingTimeInterval(-margin), margin: .milliseconds(50))
    }
}
