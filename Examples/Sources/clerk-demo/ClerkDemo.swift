import ArgumentParser
import ClerkDemoSupport
import DemoAppSupport
import Foundation

/// `clerk-demo`: a CommuteTimely/SabaiPics-like app over a simulated Clerk SDK. The SDK owns the session; TokenKit
/// hands its token to every request, retries a 401 once with the SDK's cache skipped, and publishes the state the
/// app's `RootView` loop renders.
@main
struct ClerkDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clerk-demo",
        abstract: "Clerk-like app: SDK-managed session, state loop, Bearer on every request, diet backend with JWKS.",
        discussion: """
            Starts the demo auth server's Clerk-like issuer (RS256 session JWTs, OpenID Connect discovery, /v1/jwks, \
            key rotation) and the diet backend in-process, then runs the app through launch, sign-in, requests \
            across an expiry, two key rotations (the second mid-run: one JWKS refetch, counted by the issuer, while \
            the old key's token verifies until it expires), a withdrawn key (a 401 cured by a forced refresh), offline and back, a revocation on the \
            server, sign-out and account deletion. Demo time moves forward by hand, so the run takes seconds. \
            Exits non-zero when an expectation fails.
            """
    )

    @Option(help: "The e-mail to sign in with.")
    var email = "demo@example.com"

    @Option(help: "The password to sign in with.")
    var password = "password123"

    @Option(help: ArgumentHelp("Seconds to wait for a server's answer.", valueName: "seconds"))
    var timeout = DemoTransport.defaultTimeout

    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout must be 1...300") }
    }

    func run() async throws {
        let failed = try await DemoProcess.run(removingAtExit: nil) {
            let report = DemoReport(title: "Clerk-like demo: SDK-managed session, states(), JWKS-verified backend")
            do {
                try await ClerkDemoRun(report: report, email: email, password: password, timeout: timeout).run()
            } catch {
                report.fatal(error)
            }
            return report.failed
        }
        if failed { throw ExitCode.failure }
    }
}
