import DemoServer
import Foundation
import TokenKit

/// The run of `tokenkit-demo`: an app's `AuthClient` against the in-process server. It signs in, sends many
/// concurrent requests on a fresh token and then after each of several access-token expiries, checks with the
/// server's counters that each expiry cost one refresh whatever the number of requests waiting, and starts again
/// from the stored session without signing in.
public struct QuickDemo: Sendable {
    /// What to run.
    public struct Options: Sendable {
        /// How many access-token expiries to go through.
        public var expiries = 3
        /// Concurrent requests per round.
        public var requests = 100
        /// Seconds an access token lives.
        public var tokenLifetime = 3
        /// `--serve PORT`: only run the server on that loopback port, for an app of your own, until stopped.
        public var servePort: Int?

        /// The defaults: 3 expiries, 100 concurrent requests, 3-second tokens.
        public init() {}

        /// Reads `--expiries N`, `--requests N` and `--token-lifetime N`.
        ///
        /// - Parameter arguments: The command line after the program name.
        /// - Throws: ``UsageError`` for an unknown flag or a value out of range.
        public init(arguments: [String]) throws {
            var remaining = arguments[...]
            while let flag = remaining.popFirst() {
                guard ["--expiries", "--requests", "--token-lifetime", "--serve"].contains(flag) else {
                    throw UsageError("unknown argument \(flag)")
                }
                guard let text = remaining.popFirst(), let value = Int(text) else {
                    throw UsageError("\(flag) needs a whole number")
                }
                switch flag {
                case "--expiries" where (1...20).contains(value): expiries = value
                case "--requests" where (1...1000).contains(value): requests = value
                case "--token-lifetime" where (2...3600).contains(value): tokenLifetime = value
                case "--serve" where (1...65535).contains(value): servePort = value
                default: throw UsageError("\(flag) \(value) is out of range")
                }
            }
        }
    }

    /// A command line the demo does not take.
    public struct UsageError: Error, CustomStringConvertible {
        /// What is wrong, and the usage.
        public let description: String

        init(_ problem: String) {
            description =
                "\(problem)\nusage: tokenkit-demo [--expiries 1...20] [--requests 1...1000] [--token-lifetime 2...3600]\n"
                + "       tokenkit-demo --serve PORT [--token-lifetime 2...3600]"
        }
    }

    let options: Options
    let output: @Sendable (String) -> Void

    /// Creates a run.
    ///
    /// - Parameters:
    ///   - options: What to run.
    ///   - output: Where each line goes.
    public init(options: Options = Options(), output: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.output = output
    }

    /// Runs the demo.
    ///
    /// - Returns: Whether every expectation held.
    public func run() async -> Bool {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tokenkit-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        output(
            "TokenKit demo: \(options.requests) concurrent requests per round, 1 AuthClient, "
                + "access tokens that live \(options.tokenLifetime) s")
        do {
            let server = try DemoTokenServer(accessTokenLifetime: options.tokenLifetime)
            defer { server.stop() }
            return try await steps(server, directory: directory)
        } catch {
            output("error: \(error.localizedDescription)")
            return false
        }
    }

    private func steps(_ server: DemoTokenServer, directory: URL) async throws -> Bool {
        var passed = true
        func expect(_ holds: Bool, _ step: String, _ what: String, proves: String) {
            passed = passed && holds
            output(Self.line(holds ? "ok " : "FAIL", step, "\(what) -> \(proves)"))
        }
        output(Self.line("   ", "server", "in-process token server at \(server.baseURL.absoluteString) (no SwiftNIO)"))
        let client = makeClient(server, directory: directory)
        try await client.signIn(username: "demo@example.com", password: "password123")
        expect(
            await server.stats().signIns == 1, "sign-in", "\(client.tokens.currentState)",
            proves: "the session is stored in a file store")

        var requests = 0
        var failures = 0
        for round in 0...options.expiries {
            if round > 0, let expiry = server.latestExpiry {
                try await Task.sleep(for: .milliseconds(max(0, Int(expiry.timeIntervalSinceNow * 1000)) + 200))
            }
            let before = await server.stats().refreshes
            let started = ContinuousClock.now
            let failed = await Self.concurrently(options.requests) { index in
                _ = try await client.get("/api/v1/items/\(index % 5)")
            }
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let refreshes = await server.stats().refreshes - before
            requests += options.requests
            failures += failed
            let what = "\(options.requests) concurrent requests: refreshes \(refreshes), failed \(failed)"
            if round == 0 {
                expect(refreshes == 0 && failed == 0, "fresh token", what, proves: "a valid token is shared")
            } else {
                // A round that outlives a token on a loaded machine may renew it once more, after that expiry.
                let allowed = 1 + Int(seconds / Double(options.tokenLifetime))
                expect(
                    refreshes >= 1 && refreshes <= allowed && failed == 0, "expiry \(round)/\(options.expiries)",
                    what, proves: "one refresh for every request that waited (single flight)")
            }
        }

        let signInsBefore = await server.stats().signIns
        let relaunched = makeClient(server, directory: directory)
        let state = await relaunched.restoreSession()
        let (response, _) = try await relaunched.get("/api/v1/items/0")
        requests += 1
        let signIns = await server.stats().signIns - signInsBefore
        expect(
            state.hasSession && response.status == .ok && signIns == 0, "restart",
            "a new AuthClient on the same store: \(state), request \(response.status.code), sign-ins \(signIns)",
            proves: "the stored session resumes without signing in")

        let stats = await server.stats()
        let border = "+" + String(repeating: "-", count: 28) + "+" + String(repeating: "-", count: 7) + "+"
        output(border)
        for (name, value) in [
            ("API requests", requests), ("refreshes (server)", stats.refreshes),
            ("token expiries waited for", options.expiries), ("401 answers (server)", stats.unauthorized),
            ("failed requests", failures), ("sign-ins (server)", stats.signIns),
        ] {
            output(
                "| " + name.padding(toLength: 26, withPad: " ", startingAt: 0) + " | "
                    + String(repeating: " ", count: max(0, 5 - String(value).count)) + "\(value) |")
        }
        output(border)
        output(passed ? "PASS: every expectation held" : "FAIL: an expectation did not hold")
        return passed
    }

    private func makeClient(_ server: DemoTokenServer, directory: URL) -> AuthClient {
        AuthClient.oauth(
            tokenURL: server.tokenURL, clientID: "demo-app", apiURL: server.baseURL, appName: "TokenKitDemo",
            store: FileTokenStore(directory: directory))
    }

    /// `[ok ] step         what -> proves`.
    static func line(_ mark: String, _ step: String, _ text: String) -> String {
        "[\(mark)] " + step.padding(toLength: 12, withPad: " ", startingAt: 0) + " " + text
    }

    /// Runs `count` calls at once; returns how many threw.
    private static func concurrently(
        _ count: Int, _ operation: @escaping @Sendable (Int) async throws -> Void
    ) async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask { (try? await operation(index)) == nil }
            }
            var failed = 0
            for await didFail in group where didFail { failed += 1 }
            return failed
        }
    }
}
