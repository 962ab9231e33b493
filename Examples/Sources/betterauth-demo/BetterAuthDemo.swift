import ArgumentParser
import DemoAppSupport
import DemoAuthServer
import Foundation

/// `betterauth-demo`: seed 004's chat app moved from its `idAlias` session to BetterAuth's HttpOnly cookie session
/// on TokenKit: the old session cleared with the re-login message, sign-up, a restart validated at launch, a logout
/// on another device found at the next launch, and a 401 ending the session through the global handler.
@main
struct BetterAuthDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "betterauth-demo",
        abstract: "BetterAuth-like app: cookie session, launch validation, logout elsewhere, the global 401 handler.",
        discussion: """
            Starts the demo auth server in-process (or uses --server), finds the old idAlias session and asks for a \
            new sign-in (seed 004's Japanese message), signs up, restarts (get-session at launch, sliding renewal), \
            is logged out from another device and finds out at the next launch, then meets a 401 after the account \
            was deleted elsewhere: one session check, signed out once, login shown. Exits non-zero when an \
            expectation fails.
            """
    )

    @OptionGroup var serverOptions: DemoServerOptions

    @Option(help: "The username to sign up with (3-20 of A-Z, a-z, 0-9, _ and -); a fresh one by default.")
    var username: String?

    @Option(help: "The password to sign up with (at least 8 characters).")
    var password = "demo-password-004"

    @Option(
        help: ArgumentHelp(
            "Session lifetime of the in-process server (BetterAuth's 7 days, in seconds here).", valueName: "seconds"))
    var sessionLifetime = 30

    @Option(
        help: ArgumentHelp(
            "How long after a renewal the in-process server renews a checked session (updateAge).",
            valueName: "seconds"))
    var updateAge = 1

    @Option(help: ArgumentHelp("Messages in this language: ja (the seed's) or en.", valueName: "language"))
    var language = "ja"

    func validate() throws {
        guard (5...3600).contains(sessionLifetime) else { throw ValidationError("--session-lifetime must be 5...3600") }
        guard (1...60).contains(updateAge), updateAge < sessionLifetime else {
            throw ValidationError("--update-age must be 1...60 and shorter than --session-lifetime")
        }
        guard language == "ja" || language == "en" else { throw ValidationError("--language must be ja or en") }
    }

    func run() async throws {
        let temporary = FileManager.default.temporaryDirectory.appending(path: "betterauth-demo-\(UUID().uuidString)")
        let failed = try await DemoProcess.run(removingAtExit: temporary) {
            let report = DemoReport(title: "BetterAuth-like demo (seed 004): cookie session on TokenKit")
            var configuration = DemoAuthServer.Configuration()
            configuration.betterAuth = .init(
                sessionLifetime: .seconds(sessionLifetime), updateAge: .seconds(updateAge))
            do {
                let backend = try await DemoBackend.start(
                    external: serverOptions.server, configuration: configuration, timeout: serverOptions.timeout,
                    report: report)
                do {
                    try await BetterAuthRun(demo: self, backend: backend, directory: temporary, report: report).run()
                } catch {
                    report.fatal(error)
                }
                await backend.stop()
            } catch {
                report.fatal(error)
            }
            return report.failed
        }
        if failed { throw ExitCode.failure }
    }
}
