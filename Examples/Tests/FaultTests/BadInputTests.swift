import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The demo executables on bad input, run as child processes: each ends with one `error:` line on standard
/// error and exit status 1, never a crash, never token text, and never leaves its temporary store behind.
extension ChildProcessTests {
    @Suite("Demo executables on bad input", .logLeakCheck(), .timeLimit(.minutes(2)))
    struct BadInputTests {
        /// Runs a demo with a fresh `TMPDIR` and checks that it left nothing there (fitiq-demo's temporary store
        /// goes there).
        static func run(
            _ name: String, _ arguments: [String], closedStdout: Bool = false, whenPrinted marker: String? = nil,
            then action: @escaping @Sendable (Int32) -> Void = { _ in },
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> DemoRun {
            let tmp = FileManager.default.temporaryDirectory.appending(path: "demo-tmp-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: tmp) }
            let run = try await DemoRun.run(
                name, arguments, temporaryDirectory: tmp, closedStdout: closedStdout, whenPrinted: marker, then: action)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
            #expect(leftovers.isEmpty, "the temporary store was left behind", sourceLocation: sourceLocation)
            #expect(!(run.stdout + run.stderr).contains("eyJ"), "a JWT was printed", sourceLocation: sourceLocation)
            return run
        }

        /// Checks the contract of a failed run: exit status 1, one `error:` line with `message`, no crash.
        static func expectOneErrorLine(
            _ run: DemoRun, containing message: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(!run.signalled, "crashed: \(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.status == 1, "exit status \(run.status): \(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.errorLines.count == 1, "stderr: \(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.stderr.hasPrefix("error: "), sourceLocation: sourceLocation)
            #expect(run.stderr.contains(message), "stderr: \(run.stderr)", sourceLocation: sourceLocation)
        }

        @Test func aClosedStandardOutputStopsThePrintingNotTheDemo() async throws {
            let run = try await Self.run(
                "fitiq-demo", ["--expiries", "1", "--token-lifetime", "2", "--requests-per-client", "2"],
                closedStdout: true)
            #expect(!run.signalled, "killed by a signal (SIGPIPE?): \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.isEmpty)
        }

        @Test func aHostNameThatDoesNotResolveIsNamedAsSuch() async throws {
            let url = "http://tokenkit-demo.invalid:8080"
            let run = try await Self.run("lume-demo", ["--server", url])
            Self.expectOneErrorLine(
                run, containing: "cannot reach the auth server at \(url): the host name does not resolve")
        }

        @Test func aRefusedConnectionIsNamedAsSuch() async throws {
            let port = try TestListener.closedPort()
            let run = try await Self.run("fitiq-demo", ["--server", "http://127.0.0.1:\(port)"])
            Self.expectOneErrorLine(run, containing: "connection refused: nothing listens at that address and port")
        }

        @Test func httpsToAPlainHTTPServerIsATLSMismatch() async throws {
            let server = try TestListener(reply: TestListener.badRequest)
            defer { server.close() }
            let run = try await Self.run("fitiq-demo", ["--server", "https://127.0.0.1:\(server.port)"])
            Self.expectOneErrorLine(
                run, containing: "the TLS handshake failed; is it an https URL to a plain http server?")
        }

        @Test func aServerThatAnswersButIsNotTheAuthServerIsNamedAsSuch() async throws {
            let server = try TestListener(
                reply: TestListener.response("404 Not Found", contentType: "text/html", body: "<html>nope</html>"))
            defer { server.close() }
            let url = "http://127.0.0.1:\(server.port)"
            let run = try await Self.run("lume-demo", ["--server", url])
            Self.expectOneErrorLine(
                run,
                containing: "reached \(url), but it is not a TokenKit demo auth server: GET /debug/stats answered "
                    + "HTTP 404")
        }

        @Test func aServerThatNeverAnswersTimesOutWithProgressLines() async throws {
            let listener = try TestListener(reply: nil)
            defer { listener.close() }
            let url = "http://127.0.0.1:\(listener.port)"
            let run = try await Self.run("fitiq-demo", ["--server", url, "--timeout", "3"])
            Self.expectOneErrorLine(run, containing: "cannot reach the auth server at \(url): no answer in time")
            #expect(run.stdout.contains("still waiting for the auth server at \(url) after 2 s"), "\(run.stdout)")
        }

        @Test func sigtermRemovesTheTemporaryStore() async throws {
            let run = try await Self.run(
                "fitiq-demo", ["--expiries", "5", "--token-lifetime", "10"], whenPrinted: "[ok ] login"
            ) { pid in
                kill(pid, SIGTERM)
            }
            #expect(run.status == 128 + SIGTERM, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stderr == "error: stopped by SIGTERM\n")
        }

        @Test func aFullRunPassesAndPrintsNoToken() async throws {
            let run = try await Self.run(
                "fitiq-demo", ["--expiries", "1", "--token-lifetime", "2", "--requests-per-client", "4"])
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout.contains("PASS: every expectation held"))
        }
    }
}
