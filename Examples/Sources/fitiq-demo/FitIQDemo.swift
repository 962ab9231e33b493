import ArgumentParser
import DemoAppSupport
import Foundation

/// `fitiq-demo`: five FitIQ-style API clients, written as the unification analysis migrates them, share one
/// `TokenRefreshClient` across several token expiries.
@main
struct FitIQDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fitiq-demo",
        abstract: "FitIQ-like app: five API clients share one TokenRefreshClient; one refresh per expiry.",
        discussion: """
            Starts the demo auth server in-process (or uses --server), logs in, fires concurrent requests \
            from five API clients across several access-token expiries, checks against the server's issue log \
            that every refresh followed an expiry and that no request failed, then restarts from the stored pair \
            without logging in. Exits non-zero when an expectation fails.
            """
    )

    @OptionGroup var serverOptions: DemoServerOptions
    @OptionGroup var account: DemoAccountOptions

    @Option(
        help: ArgumentHelp(
            "Where the file store keeps the session; a new temporary directory (removed at exit) by default.",
            valueName: "directory"))
    var storeDir: String?

    @Option(help: "How many access-token expiries to go through.")
    var expiries = 3

    @Option(help: "Concurrent requests per API client and round.")
    var requestsPerClient = 25

    @Flag(help: "Make the server answer every API call with an HTML page (fault injection), to see the app cope.")
    var htmlServer = false

    func validate() throws {
        guard (1...20).contains(expiries) else { throw ValidationError("--expiries must be 1...20") }
        guard (1...500).contains(requestsPerClient) else { throw ValidationError("--requests-per-client: 1...500") }
    }

    func run() async throws {
        let temporary = FileManager.default.temporaryDirectory.appending(path: "fitiq-demo-\(UUID().uuidString)")
        let directory = storeDir.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? temporary
        let failed = try await DemoProcess.run(removingAtExit: storeDir == nil ? temporary : nil) {
            let report = DemoReport(
                title: "FitIQ-like demo: 5 API clients, 1 TokenRefreshClient, executeWithAutoRetry")
            await DemoBackend.run(
                external: serverOptions.server, tokenLifetime: serverOptions.tokenLifetime,
                timeout: serverOptions.timeout, resetsFaults: htmlServer, report: report
            ) { backend in
                try await FitIQRun(demo: self, backend: backend, directory: directory, report: report).run()
            }
            return report.failed
        }
        if failed { throw ExitCode.failure }
    }
}
