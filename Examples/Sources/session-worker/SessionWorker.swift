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

    @Option(help: "The X-API-Key of the FitIQ-style endpoints.")
    var apiKey = "demo-api-key"

    @Option(help: "The e-mail to sign in with when the store is empty.")
    var email = "demo@example.com"

    @Option(help: "The password to sign in with when the store is empty.")
    var password = "password123"

    func validate() throws {
        guard (1...500).contains(requests) else { throw ValidationError("--requests must be 1...500") }
        guard (1...20).contains(expiries) else { throw ValidationError("--expiries must be 1...20") }
    }

    func run() async throws {
        guard let baseURL = URL(string: server), let origin = HTTPOrigin(baseURL) else {
            throw ValidationError("--server \(server) is not an http(s) URL")
        }
        let transport = URLSessionTransport()
        let refresher = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(baseURL: baseURL, apiKey: apiKey, transport: transport),
            store: FileTokenStore(directory: URL(fileURLWithPath: storeDir, isDirectory: true)),
            // Tokens that live seconds: the default breaker (5 in 30 s) is meant for tokens that live minutes.
            configuration: .init(maximumRefreshes: 30, breakerWindow: .seconds(30)))
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: refresher, configuration: .init(allowedOrigins: [origin]))

        var state = await refresher.restoreSession()
        if case .signedOut = state {
            try await refresher.signIn(
                fitIQLogin(baseURL: baseURL, email: email, password: password, apiKey: apiKey, transport: transport))
            state = refresher.currentState
        }
        guard state.hasSession else { throw DemoFailure("no session: the store answered \(state)") }

        var failed = 0
        for round in 1...expiries {
            try await waitUntilDue(refresher)
            let errors = await fire(api, baseURL: baseURL)
            failed += errors.count
            let first = errors.first.map { ", first: \($0)" } ?? ""
            print("round \(round): \(requests) requests, \(errors.count) failed\(first)")
        }
        if failed > 0 { throw ExitCode.failure }
    }

    /// Fires the round's requests at once; returns one line per failed request.
    private func fire(_ api: AuthenticatedClient, baseURL: URL) async -> [String] {
        await withTaskGroup(of: String?.self) { group in
            for _ in 0..<requests {
                group.addTask {
                    do {
                        _ = try await api.call(.get, baseURL, "api/v1/progress")
                        return nil
                    } catch {
                        return DemoFailure.describe(error)
                    }
                }
            }
            var errors: [String] = []
            for await error in group { if let error { errors.append(error) } }
            return errors
        }
    }

    /// Waits in real time until the token held is due for a refresh (the expiry policy's margin before `exp`):
    /// every process holds the same token, so they all start the round together. This wait is the test.
    private func waitUntilDue(_ refresher: TokenRefreshClient) async throws {
        guard let token = refresher.currentToken, let expiresAt = token.expiresAt else { return }
        let policy = refresher.configuration.expiryPolicy
        let margin =
            policy.effectiveLeeway(lifetime: token.lifetime)
            + policy.effectiveRefreshThreshold(lifetime: token.lifetime)
        let seconds = max(0, expiresAt.addingTimeInterval(-margin).timeIntervalSinceNow) + 0.05
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
    }
}
