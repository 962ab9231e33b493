import ArgumentParser
import DemoAppSupport
import Foundation

/// `lume-demo`: Lume migrated as the unification analysis describes: the old Keychain token moves into an
/// `AuthTokenPersistenceProtocol`, and `executeWithAutoRetry` replaces the manual refresh, through an outage and
/// a server-side revocation, with the auth events printed as they happen.
@main
struct LumeDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lume-demo",
        abstract: "Lume-like app: migrate the Keychain token, refresh automatically, survive an outage, get revoked.",
        discussion: """
            Starts the demo auth server in-process (or uses --server), stores a token in the Keychain the way the \
            old Lume version did, migrates it into the app's AuthTokenPersistenceProtocol storage, then shows the \
            auth events: a refresh behind a request after expiry, an outage (the session is kept), recovery, and a \
            revocation on the server (signed out, tokens deleted). Exits non-zero when an expectation fails.
            """
    )

    @OptionGroup var serverOptions: DemoServerOptions
    @OptionGroup var account: DemoAccountOptions

    @Flag(help: "Make the server answer every API call with an HTML page (fault injection), to see the app cope.")
    var htmlServer = false

    @Flag(help: "Store a damaged token in the old format, to see the migration refuse it.")
    var corruptLegacyToken = false

    func run() async throws {
        let failed = try await DemoProcess.run(removingAtExit: nil) {
            let report = DemoReport(title: "Lume-like demo: Keychain migration, executeWithAutoRetry, auth events")
            await DemoBackend.run(
                external: serverOptions.server, tokenLifetime: serverOptions.tokenLifetime,
                timeout: serverOptions.timeout, resetsFaults: htmlServer, report: report
            ) { backend in
                try await LumeRun(demo: self, backend: backend, report: report).run()
            }
            return report.failed
        }
        if failed { throw ExitCode.failure }
    }
}
